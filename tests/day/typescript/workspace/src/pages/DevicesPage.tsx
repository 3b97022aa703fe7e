import { useState } from 'react';
import { Card, Spinner } from '@fleetdash/ui';
import { DeviceTable } from '../components/DeviceTable';
import { Pagination } from '../components/Pagination';
import { useDevices } from '../hooks/useDevices';

export function DevicesPage() {
  const [page, setPage] = useState(1);
  const { data, isPending, isError, error } = useDevices(page);

  if (isPending) return <Spinner label="Loading devices" />;
  if (isError) return <p role="alert">Could not load devices: {error.message}</p>;

  return (
    <Card title={`Devices (${data.total})`}>
      <DeviceTable devices={data.items} />
      <Pagination page={page} pageSize={data.pageSize} total={data.total} onPageChange={setPage} />
    </Card>
  );
}
