import { expect, it } from 'vitest';
import { buildApp } from '../src/app.js';

it('GET /api/health', async () => {
  const res = await buildApp().inject({ method: 'GET', url: '/api/health' });
  expect(res.json()).toMatchObject({ status: 'ok' });
});
