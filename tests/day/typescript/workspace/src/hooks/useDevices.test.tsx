import { renderHook, waitFor } from '@testing-library/react';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { useDevices } from './useDevices';
import * as api from '../api/devices';

function wrapper({ children }: { children: ReactNode }) {
  const client = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  return <QueryClientProvider client={client}>{children}</QueryClientProvider>;
}

describe('useDevices', () => {
  afterEach(() => vi.restoreAllMocks());

  it('loads the requested page', async () => {
    const spy = vi
      .spyOn(api, 'listDevices')
      .mockResolvedValue({ items: [], total: 0, page: 2, pageSize: 20 });
    const { result } = renderHook(() => useDevices(2), { wrapper });
    await waitFor(() => expect(result.current.isSuccess).toBe(true));
    expect(spy).toHaveBeenCalledWith(2, 20);
  });
});
