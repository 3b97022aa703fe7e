import type { Device, Page } from '../types';
import { fetchJson } from './client';

export function listDevices(page = 1, pageSize = 20): Promise<Page<Device>> {
  const params = new URLSearchParams({ page: String(page), pageSize: String(pageSize) });
  return fetchJson<Page<Device>>(`/devices?${params}`);
}

export function getDevice(id: string): Promise<Device> {
  return fetchJson<Device>(`/devices/${encodeURIComponent(id)}`);
}
