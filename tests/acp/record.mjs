// Records an ACP session as it passes: `node record.mjs FILE -- AGENT ARGS...` starts the agent
// and copies lines both ways, appending each to FILE prefixed by where it went (`>` editor to
// agent, `<` agent to editor). The proxy's tests replay such a recording through the proxy.
import { spawn } from "node:child_process";
import { appendFileSync } from "node:fs";
import { createInterface } from "node:readline";

const sep = process.argv.indexOf("--");
const file = process.argv[2];
const [command, ...args] = process.argv.slice(sep + 1);
const agent = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
createInterface({ input: process.stdin }).on("line", (line) => {
  appendFileSync(file, `>${line}\n`);
  agent.stdin.write(line + "\n");
}).on("close", () => agent.stdin.end());
createInterface({ input: agent.stdout }).on("line", (line) => {
  appendFileSync(file, `<${line}\n`);
  process.stdout.write(line + "\n");
});
agent.on("close", (code) => process.exit(code ?? 1));
