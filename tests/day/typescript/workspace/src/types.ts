export type DeviceStatus = 'online' | 'offline' | 'degraded';

export interface Device {
  id: string;
  name: string;
  status: DeviceStatus;
  firmware: string;
  lastSeen: string; // ISO timestamp
  site: string;
}

export interface Page<T> {
  items: T[];
  total: number;
  page: number;
  pageSize: number;
}
