import { ApiError, fetchJson } from './client';

function mockFetch(body: unknown, init: ResponseInit = { status: 200 }) {
  return vi.spyOn(globalThis, 'fetch').mockResolvedValue(new Response(JSON.stringify(body), init));
}

describe('fetchJson', () => {
  afterEach(() => vi.restoreAllMocks());

  it('returns parsed JSON', async () => {
    mockFetch({ status: 'ok' });
    await expect(fetchJson('/health')).resolves.toEqual({ status: 'ok' });
  });

  it('throws ApiError on non-2xx', async () => {
    mockFetch({ error: 'nope' }, { status: 503, statusText: 'Service Unavailable' });
    await expect(fetchJson('/health')).rejects.toBeInstanceOf(ApiError);
  });
});
