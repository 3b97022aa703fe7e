import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { listDevices } from '../api/devices';

export function useDevices(page: number, pageSize = 20) {
  return useQuery({
    queryKey: ['devices', page, pageSize],
    queryFn: () => listDevices(page, pageSize),
    placeholderData: keepPreviousData,
    staleTime: 15_000,
  });
}
