import type { FastifyPluginAsync } from 'fastify';
import type { DeviceStore } from '../store.js';

interface ListQuery {
  page?: string;
  pageSize?: string;
}

export const deviceRoutes: FastifyPluginAsync<{ store: DeviceStore }> = async (app, { store }) => {
  app.get<{ Querystring: ListQuery }>('/devices', async (req) => {
    const page = Math.max(1, Number(req.query.page ?? 1));
    const pageSize = Math.min(100, Math.max(1, Number(req.query.pageSize ?? 20)));
    return store.list({ page, pageSize });
  });

  app.get<{ Params: { id: string } }>('/devices/:id', async (req, reply) => {
    const device = store.get(req.params.id);
    if (!device) return reply.code(404).send({ error: 'not found' });
    return device;
  });
};
