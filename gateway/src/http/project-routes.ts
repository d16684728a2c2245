// /org/projects (docs/gateway.md, seed §4.5-4.8): list with paging and filters, create, get by id or
// name, update name or status, soft delete when empty. A project-scoped key sees and touches
// only its own project and cannot create projects.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { invalidInput, notFound } from 'browser-telemetry-agent/http-kit';
import type { GatewayStore, Project, ProjectStatus } from '../storage/store.ts';
import { PROJECT_STATUSES } from '../storage/store.ts';
import { principalOf, requireOrgWide, requireProjectAccess } from './auth.ts';
import { idParams, nameFilterProperties, pagingQueryProperties, sendPage, type NameFilterPageQuery } from './paging.ts';
import { projectView } from './views.ts';

const NAME = { type: 'string', minLength: 1, maxLength: 255 } as const;

const listQuery = {
  type: 'object',
  properties: {
    ...pagingQueryProperties,
    ...nameFilterProperties,
  },
  additionalProperties: false,
} as const;

const createBody = { type: 'object', properties: { name: NAME }, required: ['name'], additionalProperties: false } as const;

const updateBody = {
  type: 'object',
  properties: { name: NAME, status: { type: 'string', enum: PROJECT_STATUSES } },
  additionalProperties: false,
} as const;

/** A live project the caller may touch, by id or name: 404 when there is none, 403 across projects. */
async function accessibleProject(store: GatewayStore, request: FastifyRequest): Promise<Project> {
  const { id } = request.params as { id: string };
  const project = await store.findProject(id);
  if (!project) throw notFound('project not found');
  requireProjectAccess(principalOf(request), project.id, 'project');
  return project;
}

export function registerProjectRoutes(app: FastifyInstance, store: GatewayStore, onDeleted: (projectId: string) => void = () => undefined): void {
  app.get('/org/projects', { schema: { querystring: listQuery } }, async (request, reply) => {
    const query = request.query as NameFilterPageQuery;
    const principal = principalOf(request);
    const page = await store.listProjects({ ...query, onlyId: principal.projectId ?? undefined });
    return sendPage(reply, query, page, projectView);
  });

  app.post('/org/projects', { schema: { body: createBody } }, async (request, reply) => {
    requireOrgWide(principalOf(request));
    const { name } = request.body as { name: string };
    const project = await store.createProject(name);
    return reply.code(201).send(projectView(project));
  });

  app.get('/org/projects/:id', { schema: { params: idParams } }, async (request) => projectView(await accessibleProject(store, request)));

  app.patch('/org/projects/:id', { schema: { params: idParams, body: updateBody } }, async (request) => {
    const patch = (request.body ?? {}) as { name?: string; status?: ProjectStatus };
    if (patch.name === undefined && patch.status === undefined) {
      throw invalidInput('at least one of name, status is required', [
        { code: 'invalid_input', message: 'at least one of name, status is required', field: '$' },
      ]);
    }
    const project = await accessibleProject(store, request);
    return projectView(await store.updateProject(project.id, patch));
  });

  app.delete('/org/projects/:id', { schema: { params: idParams } }, async (request, reply: FastifyReply) => {
    const project = await accessibleProject(store, request);
    await store.deleteProject(project.id);
    onDeleted(project.id);
    return reply.code(204).send();
  });
}
