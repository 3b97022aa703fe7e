import { describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';

describe('GET /api/devices', () => {
  it('returns the first page', async () => {
    const app = buildApp();
    const res = await app.inject({ method: 'GET', url: '/api/devices?pageSize=5' });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.items).toHaveLength(5);
    expect(body.page).toBe(1);
  });

  it('404s on an unknown id', async () => {
    const app = buildApp();
    const res = await app.inject({ method: 'GET', url: '/api/devices/nope' });
    expect(res.statusCode).toBe(404);
  });
});
