import type { Device, DeviceStatus } from './types.js';

const SITES = ['berlin', 'lisbon', 'oslo', 'porto', 'tallinn'];
const STATUSES: DeviceStatus[] = ['online', 'online', 'online', 'degraded', 'offline'];

export function seedDevices(count: number): Device[] {
  return Array.from({ length: count }, (_, i) => {
    const site = SITES[i % SITES.length];
    return {
      id: `dev-${String(i + 1).padStart(3, '0')}`,
      name: `edge-${site}-${String(Math.floor(i / SITES.length) + 1).padStart(2, '0')}`,
      status: STATUSES[i % STATUSES.length],
      firmware: i % 7 === 0 ? '2.3.9' : '2.4.1',
      lastSeen: new Date(Date.UTC(2024, 9, 21, 12) - i * 600_000).toISOString(),
      site,
    };
  });
}
