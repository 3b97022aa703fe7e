import { readFileSync, existsSync } from 'node:fs';

const required = ['VITE_API_URL', 'PORT'];
const file = existsSync('.env') ? '.env' : '.env.example';
const keys = readFileSync(file, 'utf8').split('\n').map((l) => l.split('=')[0]);
const missing = required.filter((k) => !keys.includes(k));
if (missing.length) {
  console.error(`missing in ${file}: ${missing.join(', ')}`);
  process.exit(1);
}
console.log(`${file}: ok`);
