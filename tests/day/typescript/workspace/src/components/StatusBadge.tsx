import clsx from 'clsx';
import type { DeviceStatus } from '../types';

const LABELS: Record<DeviceStatus, string> = {
  online: 'Online',
  offline: 'Offline',
  degraded: 'Degraded',
};

export function StatusBadge({ status }: { status: DeviceStatus }) {
  return <span className={clsx('badge', `badge--${status}`)}>{LABELS[status]}</span>;
}
