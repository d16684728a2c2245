// /org/api_keys (docs/gateway.md, seed §2 and §4.9): create (the plaintext is in that response only),
// list, get and delete, always masked. A project-scoped key works only with keys of its own
// project and cannot mint an org-wide key; no key can delete itself. A deleted key's open
// forwarded streams end at once (`onKeyDeleted`, key-watch.ts).

import type { FastifyInstance, FastifyReply } from 'fastify';
import { forbidden, notFound } from 'browser-telemetry-agent/http-kit';
import { MAX_DAYS_TO_EXPIRE } from '../api-key.ts';
import { issueApiKey } from '../issue-api-key.ts';
import type { ApiKeySortField, ApiKeyStatusFilter, Creator, GatewayStore } from '../storage/store.ts';
import { principalOf, requireProjectAccess, type Principal } from './auth.ts';
import { idParams, nameFilterProperties, pagingQueryProperties, sendPage, type NameFilterPageQuery } from './paging.ts';
import { apiKeyView } from './views.ts';

const listQuery = {
  type: 'object',
  properties: {
    ...pagingQueryProperties,
    ...nameFilterProperties,
    include_deleted: { type: 'boolean' },
    status: { type: 'string', enum: ['active', 'deleted', 'all'] },
    sort_by: { type: 'string', enum: ['created_at', 'name', 'expires_at'] },
    sort_direction: { type: 'string', enum: ['asc', 'desc'] },
  },
  additionalProperties: false,
} as const;

const retrieveQuery = { type: 'object', properties: { include_deleted: { type: 'boolean' } }, additionalProperties: false } as const;

const createBody = {
  type: 'object',
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 255 },
    project_id: { type: ['string', 'null'], minLength: 1 },
    days_to_expire: { type: ['integer', 'null'], minimum: 1, maximum: MAX_DAYS_TO_EXPIRE },
  },
  required: ['name'],
  additionalProperties: false,
} as const;

interface ListQuery extends NameFilterPageQuery {
  include_deleted?: boolean;
  status?: ApiKeyStatusFilter;
  sort_by?: ApiKeySortField;
  sort_direction?: 'asc' | 'desc';
}

interface CreateBody {
  name: string;
  project_id?: string | null;
  days_to_expire?: number | null;
}

/** `created_by` of keys made through the API: the key that made them. */
function creatorOf(principal: Principal): Creator {
  return { id: principal.keyId, email: '', name: principal.keyName };
}

export function registerApiKeyRoutes(app: FastifyInstance, store: GatewayStore, onKeyDeleted: (keyId: string) => void = () => undefined): void {
  app.get('/org/api_keys', { schema: { querystring: listQuery } }, async (request, reply) => {
    const query = request.query as ListQuery;
    const principal = principalOf(request);
    const page = await store.listApiKeys({
      limit: query.limit,
      offset: query.offset,
      query: query.query,
      name: query.name,
      status: query.status ?? (query.include_deleted ? 'all' : 'active'),
      projectId: principal.projectId ?? undefined,
      sortBy: query.sort_by ?? 'created_at',
      sortDirection: query.sort_direction ?? 'asc',
    });
    return sendPage(reply, query, page, apiKeyView);
  });

  app.post('/org/api_keys', { schema: { body: createBody } }, async (request, reply) => {
    const body = request.body as CreateBody;
    const principal = principalOf(request);
    // A project-scoped key creates keys of its own project only (never an org-wide one).
    const projectId = body.project_id === undefined ? principal.projectId : body.project_id;
    requireProjectAccess(principal, projectId, 'API key');
    const { key, record } = await issueApiKey(store, { name: body.name, projectId, createdBy: creatorOf(principal), daysToExpire: body.days_to_expire });
    return reply.code(201).send({ ...apiKeyView(record), key });
  });

  app.get('/org/api_keys/:id', { schema: { params: idParams, querystring: retrieveQuery } }, async (request) => {
    const { id } = request.params as { id: string };
    const { include_deleted: includeDeleted } = request.query as { include_deleted?: boolean };
    const key = await store.findApiKey(id, includeDeleted === true);
    if (!key) throw notFound('API key not found');
    requireProjectAccess(principalOf(request), key.projectId, 'API key');
    return apiKeyView(key);
  });

  app.delete('/org/api_keys/:id', { schema: { params: idParams } }, async (request, reply: FastifyReply) => {
    const { id } = request.params as { id: string };
    const principal = principalOf(request);
    const key = await store.findApiKey(id);
    if (!key) throw notFound('API key not found');
    requireProjectAccess(principal, key.projectId, 'API key');
    if (key.id === principal.keyId) throw forbidden('an API key cannot delete itself: use another key');
    await store.deleteApiKey(key.id);
    onKeyDeleted(key.id);
    return reply.code(204).send();
  });
}
