import { Button } from '@fleetdash/ui';
import type { Device } from '../types';
import { formatRelative } from '../lib/format';
import { StatusBadge } from './StatusBadge';

interface Props {
  devices: Device[];
  onReboot?: (id: string) => void;
}

export function DeviceTable({ devices, onReboot }: Props) {
  if (devices.length === 0) {
    return <p className="empty">No devices match.</p>;
  }
  return (
    <table className="device-table">
      <thead>
        <tr>
          <th>Name</th>
          <th>Status</th>
          <th>Firmware</th>
          <th>Last seen</th>
          <th />
        </tr>
      </thead>
      <tbody>
        {devices.map((d) => (
          <tr key={d.id}>
            <td>{d.name}</td>
            <td>
              <StatusBadge status={d.status} />
            </td>
            <td>{d.firmware}</td>
            <td>{formatRelative(d.lastSeen)}</td>
            <td>
              {onReboot && (
                <Button kind="danger" size="sm" onClick={() => onReboot(d.id)}>
                  Reboot
                </Button>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
