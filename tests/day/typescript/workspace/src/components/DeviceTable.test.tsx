import { render, screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { DeviceTable } from './DeviceTable';
import type { Device } from '../types';

const devices: Device[] = [
  {
    id: 'dev-001',
    name: 'edge-berlin-01',
    status: 'online',
    firmware: '2.4.1',
    lastSeen: '2024-10-21T08:00:00Z',
    site: 'berlin',
  },
  {
    id: 'dev-002',
    name: 'edge-lisbon-03',
    status: 'offline',
    firmware: '2.3.9',
    lastSeen: '2024-10-19T17:30:00Z',
    site: 'lisbon',
  },
];

describe('DeviceTable', () => {
  it('renders one row per device', () => {
    render(<DeviceTable devices={devices} />);
    expect(screen.getAllByRole('row')).toHaveLength(3);
  });

  it('calls onReboot with the device id', async () => {
    const onReboot = vi.fn();
    render(<DeviceTable devices={devices} onReboot={onReboot} />);
    await userEvent.click(screen.getAllByRole('button', { name: 'Reboot' })[1]);
    expect(onReboot).toHaveBeenCalledWith('dev-002');
  });

  it('shows an empty state', () => {
    render(<DeviceTable devices={[]} />);
    expect(screen.getByText('No devices match.')).toBeInTheDocument();
  });
});
