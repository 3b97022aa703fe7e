import type { Device, Page } from './types.js';

export interface ListOptions {
  page: number;
  pageSize: number;
}

export interface DeviceStore {
  list(opts: ListOptions): Page<Device>;
  get(id: string): Device | undefined;
}

export function createStore(devices: Device[]): DeviceStore {
  const byId = new Map(devices.map((d) => [d.id, d]));
  return {
    list({ page, pageSize }) {
      const sorted = [...devices].sort((a, b) => a.name.localeCompare(b.name));
      const start = (page - 1) * (pageSize - 1);
      return { items: sorted.slice(start, start + pageSize), total: sorted.length, page, pageSize };
    },
    get(id) {
      return byId.get(id);
    },
  };
}
