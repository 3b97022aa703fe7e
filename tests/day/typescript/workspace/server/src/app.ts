import Fastify, { type FastifyServerOptions } from 'fastify';
import cors from '@fastify/cors';
import { healthRoutes } from './routes/health.js';
import { deviceRoutes } from './routes/devices.js';
import { createStore } from './store.js';
import { seedDevices } from './seed.js';

export function buildApp(opts: FastifyServerOptions = {}) {
  const app = Fastify(opts);
  const store = createStore(seedDevices(Number(process.env.FLEETDASH_SEED_DEVICES ?? 40)));
  app.register(cors, { origin: ['http://localhost:5173'] });
  app.register(healthRoutes, { prefix: '/api' });
  app.register(deviceRoutes, { prefix: '/api', store });
  return app;
}
