// The gateway's organization API (docs/gateway.md, seed §4.5-4.9) through the official SDK, unchanged:
// projects (list, paging, filters, retrieve, update, delete), API keys (create, retrieve masked,
// list, delete), concurrent creates. Every test runs on SQLite and on PostgreSQL.

import type Kernel from '@onkernel/sdk';
import { APIError, ConflictError, NotFoundError, PermissionDeniedError } from '@onkernel/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS_WITH_EMBEDDED, GatewayRig, rejectionOf, TestStorages, uniqueName } from './support/gateway-harness.ts';

type Project = Awaited<ReturnType<Kernel['projects']['create']>>;

const storages = new TestStorages();
afterAll(() => storages.close());

describe.each(BACKENDS_WITH_EMBEDDED)('the organization API on %s', (backend) => {
  let rig: GatewayRig;
  beforeAll(async () => {
    rig = await GatewayRig.start(await storages.fresh(backend));
  });
  afterAll(() => rig?.close());

  /** Whether GET /org/projects/{id} finds the project. */
  async function exists(id: string): Promise<boolean> {
    const status = (await rig.fetch(`/org/projects/${id}`)).status;
    if (status !== 200 && status !== 404) throw new Error(`unexpected status ${status}`);
    return status === 200;
  }

  describe('projects.list', () => {
    const PREFIX = `paged-${process.pid}-`;
    const names = Array.from({ length: 250 }, (_, i) => `${PREFIX}${String(i).padStart(3, '0')}`);
    beforeAll(async () => {
      const client = rig.sdk();
      // In order, so creation order is the name order.
      for (const name of names) await client.projects.create({ name });
    }, 60_000);

    it('auto-pagination walks all 250 projects in creation order', async () => {
      const seen: string[] = [];
      for await (const project of rig.sdk().projects.list({ query: PREFIX })) seen.push(project.name);
      expect(seen).toEqual(names);
    });

    it('auto-pagination asks for 13 pages of 20 and stops at the last', async () => {
      const before = rig.requestsTo('GET', '/org/projects').length;
      const listed = [];
      for await (const project of rig.sdk().projects.list({ query: PREFIX })) listed.push(project);
      const after = await rig.waitForRequests('GET', '/org/projects', before + 13);
      expect(after.length - before).toBe(13);
    });

    it('a page holds `limit` projects and its headers point at the next page', async () => {
      const page = await rig.sdk().projects.list({ query: PREFIX, limit: 7 });
      expect([page.getPaginatedItems().length, page.has_more, page.next_offset]).toEqual([7, true, 7]);
    });

    it('offset skips that many projects', async () => {
      const page = await rig.sdk().projects.list({ query: PREFIX, limit: 3, offset: 100 });
      expect(page.getPaginatedItems().map((p) => p.name)).toEqual(names.slice(100, 103));
    });

    it('the last page says there is no more, with next offset 0', async () => {
      const page = await rig.sdk().projects.list({ query: PREFIX, limit: 100, offset: 200 });
      expect([page.getPaginatedItems().length, page.has_more, page.next_offset]).toEqual([50, false, 0]);
    });

    it('query matches a case-insensitive substring of the name', async () => {
      const page = await rig.sdk().projects.list({ query: `${PREFIX.toUpperCase()}12`, limit: 100 });
      expect(page.getPaginatedItems().map((p) => p.name)).toEqual(names.filter((n) => n.startsWith(`${PREFIX}12`)));
    });

    it('query takes % and _ literally', async () => {
      const client = rig.sdk();
      const literal = await client.projects.create({ name: uniqueName('100%_sure') });
      const page = await client.projects.list({ query: '100%_s', limit: 100 });
      expect(page.getPaginatedItems().map((p) => p.id)).toEqual([literal.id]);
    });

    it('name matches exactly one project', async () => {
      const page = await rig.sdk().projects.list({ name: names[42] });
      expect(page.getPaginatedItems().map((p) => p.name)).toEqual([names[42]]);
    });

    it('name does not match a different case', async () => {
      const page = await rig.sdk().projects.list({ name: names[42]!.toUpperCase() });
      expect(page.getPaginatedItems()).toEqual([]);
    });

    it('a limit above 100 is 400 invalid_input naming limit', async () => {
      const error = await rejectionOf(rig.sdk().projects.list({ limit: 101 }));
      expect([error.status, error.error.code, error.error.details[0].field]).toEqual([400, 'invalid_input', 'limit']);
    });

    it('a negative offset is 400 invalid_input naming offset', async () => {
      const response = await rig.fetch('/org/projects?offset=-1');
      expect([response.status, ((await response.json()) as { details: Array<{ field: string }> }).details[0]!.field]).toEqual([400, 'offset']);
    });

    // Beyond 2^53 - 1 a JSON number is no longer exact, and the stores refuse such values
    // (SQLite: SQLITE_MISMATCH, PostgreSQL: bigint out of range): a 500 before the bound.
    it.each([
      ['/org/projects', 'offset', '99999999999999999999'],
      ['/org/projects', 'offset', '9223372036854775807'],
      ['/org/projects', 'offset', '9007199254740992'],
      ['/org/api_keys', 'offset', '99999999999999999999'],
      ['/org/api_keys', 'offset', '9223372036854775807'],
      ['/org/projects', 'limit', '99999999999999999999'],
      ['/org/api_keys', 'limit', '9223372036854775807'],
    ])('GET %s?%s=%s is 400 invalid_input naming it', async (path, name, value) => {
      const response = await rig.fetch(`${path}?${name}=${value}`);
      const body = (await response.json()) as { code: string; message: string; details: Array<{ field: string }> };
      expect([response.status, body.code, body.details[0]!.field, typeof body.message]).toEqual([400, 'invalid_input', name, 'string']);
    });

    it.each(['/org/projects', '/org/api_keys'])('GET %s at the largest offset (2^53 - 1) is an empty last page', async (path) => {
      const response = await rig.fetch(`${path}?offset=9007199254740991`);
      expect([response.status, await response.json(), response.headers.get('x-has-more'), response.headers.get('x-next-offset')]).toEqual([
        200,
        [],
        'false',
        '0',
      ]);
    });

    it('an unknown query parameter is 400 invalid_input', async () => {
      const response = await rig.fetch('/org/projects?colour=red');
      expect([response.status, ((await response.json()) as { code: string }).code]).toEqual([400, 'invalid_input']);
    });

    it('a deleted project is never listed', async () => {
      const client = rig.sdk();
      const project = await client.projects.create({ name: uniqueName('listed-then-deleted') });
      await client.projects.delete(project.id);
      const page = await client.projects.list({ name: project.name });
      expect(page.getPaginatedItems()).toEqual([]);
    });
  });

  describe('projects.create', () => {
    it('returns an active project with ISO 8601 UTC times', async () => {
      const project = await rig.sdk().projects.create({ name: uniqueName('fresh') });
      expect(project).toEqual({
        id: expect.any(String),
        name: expect.stringMatching(/^fresh-/),
        status: 'active',
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        updated_at: project.created_at,
      });
    });

    it('answers 201', async () => {
      const response = await rig.fetch('/org/projects', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: uniqueName('status') }),
      });
      expect(response.status).toBe(201);
    });

    it('an empty name is 400 invalid_input naming name', async () => {
      const error = await rejectionOf(rig.sdk().projects.create({ name: '' }));
      expect([error.status, error.error.code, error.error.details[0].field]).toEqual([400, 'invalid_input', 'name']);
    });

    it('a name of 255 code points is accepted', async () => {
      const prefix = uniqueName('long');
      const name = prefix + '😀'.repeat(255 - prefix.length);
      expect(Array.from(name).length).toBe(255);
      await expect(rig.sdk().projects.create({ name })).resolves.toMatchObject({ name });
    });

    it('a name of 256 code points is 400 invalid_input', async () => {
      const error = await rejectionOf(rig.sdk().projects.create({ name: 'x'.repeat(256) }));
      expect([error.status, error.error.code]).toEqual([400, 'invalid_input']);
    });

    it('a name taken by a live project is 409 conflict, not retried', async () => {
      const name = uniqueName('taken');
      await rig.sdk().projects.create({ name });
      const error = await rejectionOf(rig.sdk().projects.create({ name }));
      expect([error instanceof ConflictError, error.error.code, error.headers.get('x-should-retry')]).toEqual([true, 'conflict', 'false']);
    });

    it('the name of a deleted project can be used again', async () => {
      const client = rig.sdk();
      const name = uniqueName('reused');
      await client.projects.delete((await client.projects.create({ name })).id);
      await expect(client.projects.create({ name })).resolves.toMatchObject({ name, status: 'active' });
    });

    it('20 parallel creates of one name make exactly one project; the other 19 are 409', async () => {
      const client = rig.sdk();
      const name = uniqueName('race');
      const results = await Promise.allSettled(Array.from({ length: 20 }, () => client.projects.create({ name })));
      const created = results.filter((r) => r.status === 'fulfilled');
      const conflicts = results.filter((r) => r.status === 'rejected' && r.reason instanceof ConflictError);
      const listed = (await client.projects.list({ name })).getPaginatedItems();
      expect([created.length, conflicts.length, listed.length]).toEqual([1, 19, 1]);
    });
  });

  describe('projects.retrieve', () => {
    let project: Project;
    beforeAll(async () => {
      project = await rig.sdk().projects.create({ name: uniqueName('retrievable') });
    });

    it('finds a project by id', async () => {
      await expect(rig.sdk().projects.retrieve(project.id)).resolves.toEqual(project);
    });

    it('finds a project by name', async () => {
      await expect(rig.sdk().projects.retrieve(project.name)).resolves.toEqual(project);
    });

    it('an unknown id is 404 not_found', async () => {
      const error = await rejectionOf(rig.sdk().projects.retrieve('no-such-project'));
      expect([error instanceof NotFoundError, error.error.code]).toEqual([true, 'not_found']);
    });
  });

  describe('projects.update', () => {
    it('renames a project', async () => {
      const client = rig.sdk();
      const project = await client.projects.create({ name: uniqueName('before') });
      const renamed = await client.projects.update(project.id, { name: `${project.name}-after` });
      expect([renamed.id, renamed.name]).toEqual([project.id, `${project.name}-after`]);
    });

    it('moves updated_at forward and keeps created_at', async () => {
      const client = rig.sdk();
      const project = await client.projects.create({ name: uniqueName('timed') });
      const updated = await client.projects.update(project.id, { status: 'archived' });
      expect(updated.created_at).toBe(project.created_at);
      expect(Date.parse(updated.updated_at)).toBeGreaterThanOrEqual(Date.parse(project.updated_at));
    });

    it('archives a project', async () => {
      const client = rig.sdk();
      const project = await client.projects.create({ name: uniqueName('archivable') });
      await client.projects.update(project.id, { status: 'archived' });
      await expect(client.projects.retrieve(project.id)).resolves.toMatchObject({ status: 'archived' });
    });

    it('makes an archived project active again', async () => {
      const client = rig.sdk();
      const project = await client.projects.create({ name: uniqueName('revived') });
      await client.projects.update(project.id, { status: 'archived' });
      await expect(client.projects.update(project.id, { status: 'active' })).resolves.toMatchObject({ status: 'active' });
    });

    it('a rename to a live project name is 409 conflict', async () => {
      const client = rig.sdk();
      const first = await client.projects.create({ name: uniqueName('first') });
      const second = await client.projects.create({ name: uniqueName('second') });
      const error = await rejectionOf(client.projects.update(second.id, { name: first.name }));
      expect([error.status, error.error.code]).toEqual([409, 'conflict']);
    });

    it('an unknown status is 400 invalid_input naming status', async () => {
      const project = await rig.sdk().projects.create({ name: uniqueName('bad-status') });
      const error = await rejectionOf(rig.sdk().projects.update(project.id, { status: 'paused' as 'active' }));
      expect([error.status, error.error.details[0].field]).toEqual([400, 'status']);
    });

    it('an unknown field is 400 invalid_input naming it', async () => {
      const project = await rig.sdk().projects.create({ name: uniqueName('bad-field') });
      const error = await rejectionOf(rig.sdk().projects.update(project.id, { colour: 'red' } as object));
      expect([error.status, error.error.details[0].field]).toEqual([400, 'colour']);
    });

    it('an empty update is 400 invalid_input', async () => {
      const project = await rig.sdk().projects.create({ name: uniqueName('empty-update') });
      const error = await rejectionOf(rig.sdk().projects.update(project.id, {}));
      expect([error.status, error.error.code]).toEqual([400, 'invalid_input']);
    });

    it('a body that is not JSON is 400 bad_request', async () => {
      const project = await rig.sdk().projects.create({ name: uniqueName('bad-json') });
      const response = await rig.fetch(`/org/projects/${project.id}`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: '{"name":' });
      expect([response.status, ((await response.json()) as { code: string }).code]).toEqual([400, 'bad_request']);
    });
  });

  describe('projects.delete', () => {
    it('deletes an empty project', async () => {
      const client = rig.sdk();
      const project = await client.projects.create({ name: uniqueName('empty') });
      await client.projects.delete(project.id);
      expect(await exists(project.id)).toBe(false);
    });

    it('answers 204', async () => {
      const project = await rig.sdk().projects.create({ name: uniqueName('deleted-204') });
      expect((await rig.fetch(`/org/projects/${project.id}`, { method: 'DELETE' })).status).toBe(204);
    });

    it('a deleted project is 404 afterwards', async () => {
      const client = rig.sdk();
      const project = await client.projects.create({ name: uniqueName('gone') });
      await client.projects.delete(project.id);
      await expect(client.projects.retrieve(project.id)).rejects.toBeInstanceOf(NotFoundError);
    });

    it('a project with a live key is 409 project_not_empty, sent once and not retried', async () => {
      const client = rig.sdk();
      const project = await client.projects.create({ name: uniqueName('keyed') });
      await client.apiKeys.create({ name: 'in project', project_id: project.id });
      const error = await rejectionOf(client.projects.delete(project.id));
      const requests = await rig.waitForRequests('DELETE', `/org/projects/${project.id}`, 1);
      expect([error instanceof ConflictError, error.error.code, requests.length]).toEqual([true, 'project_not_empty', 1]);
    });

    it('a project with a live browser is 409 project_not_empty', async () => {
      const client = rig.sdk();
      const project = await client.projects.create({ name: uniqueName('browsing') });
      await rig.registerBrowser({ session_id: uniqueName('s'), agent_url: 'http://127.0.0.1:9', agent_token: 't', project_id: project.id });
      const error = await rejectionOf(client.projects.delete(project.id));
      expect([error.status, error.error.code]).toEqual([409, 'project_not_empty']);
    });

    it('a project whose keys are all deleted can be deleted', async () => {
      const client = rig.sdk();
      const project = await client.projects.create({ name: uniqueName('emptied') });
      const key = await client.apiKeys.create({ name: 'temporary', project_id: project.id });
      await client.apiKeys.delete(key.id);
      await client.projects.delete(project.id);
      expect(await exists(project.id)).toBe(false);
    });

    it('a project whose only key has expired can be deleted', async () => {
      const client = rig.sdk();
      const project = await client.projects.create({ name: uniqueName('expired-only') });
      await rig.createKey({ projectId: project.id, expiresAt: Date.now() - 1000 });
      await client.projects.delete(project.id);
      expect(await exists(project.id)).toBe(false);
    });
  });

  describe('API keys', () => {
    it('create returns the plaintext key once, with a readable prefix and 32+ bytes of entropy', async () => {
      const created = await rig.sdk().apiKeys.create({ name: 'plaintext' });
      expect(created.key).toMatch(/^btg_[A-Za-z0-9_-]{43}$/);
    });

    it('a created key authenticates', async () => {
      const created = await rig.sdk().apiKeys.create({ name: 'usable' });
      await expect(rig.sdk(created.key).projects.list({ limit: 1 })).resolves.toBeDefined();
    });

    it('retrieve shows the first 8 and last 4 characters around an ellipsis', async () => {
      const created = await rig.sdk().apiKeys.create({ name: 'masked' });
      const key = await rig.sdk().apiKeys.retrieve(created.id);
      expect(key.masked_key).toBe(`${created.key.slice(0, 8)}…${created.key.slice(-4)}`);
    });

    it('no retrieve response contains the full key', async () => {
      const created = await rig.sdk().apiKeys.create({ name: 'secret' });
      const response = await rig.sdk().apiKeys.retrieve(created.id).asResponse();
      const text = await response.text();
      expect([text.includes(created.key), text.includes(created.key.slice(8, -4))]).toEqual([false, false]);
    });

    it('no list response contains a full key', async () => {
      const created = await rig.sdk().apiKeys.create({ name: 'listed-secret' });
      const text = await (await rig.fetch('/org/api_keys?limit=100')).text();
      expect(text.includes(created.key.slice(8, -4))).toBe(false);
    });

    it('retrieve has the fields of seed §2', async () => {
      const created = await rig.sdk().apiKeys.create({ name: 'fields' });
      const key = await rig.sdk().apiKeys.retrieve(created.id);
      expect(key).toEqual({
        id: created.id,
        name: 'fields',
        created_at: created.created_at,
        created_by: { id: expect.any(String), email: expect.any(String), name: 'admin' },
        expires_at: null,
        deleted_at: null,
        masked_key: created.masked_key,
        project_id: null,
        project_name: null,
      });
    });

    it('created_by is the key that created it', async () => {
      const admin = (await rig.sdk().apiKeys.list({ name: 'admin' })).getPaginatedItems()[0]!;
      const created = await rig.sdk().apiKeys.create({ name: 'child' });
      expect(created.created_by.id).toBe(admin.id);
    });

    it('a project-scoped key shows its project id and name', async () => {
      const project = await rig.sdk().projects.create({ name: uniqueName('scoped-key-project') });
      const created = await rig.sdk().apiKeys.create({ name: 'scoped', project_id: project.id });
      await expect(rig.sdk().apiKeys.retrieve(created.id)).resolves.toMatchObject({ project_id: project.id, project_name: project.name });
    });

    it('days_to_expire sets expires_at that many days ahead', async () => {
      const created = await rig.sdk().apiKeys.create({ name: 'expiring', days_to_expire: 30 });
      const days = (Date.parse(created.expires_at!) - Date.parse(created.created_at)) / 86_400_000;
      expect(days).toBe(30);
    });

    it('an unknown project_id is 400 invalid_input naming project_id', async () => {
      const error = await rejectionOf(rig.sdk().apiKeys.create({ name: 'orphan', project_id: 'no-such-project' }));
      expect([error.status, error.error.details[0].field]).toEqual([400, 'project_id']);
    });

    it('list pages with the same headers as projects', async () => {
      for (let i = 0; i < 3; i++) await rig.sdk().apiKeys.create({ name: 'paged-key' });
      const page = await rig.sdk().apiKeys.list({ name: 'paged-key', limit: 2 });
      expect([page.getPaginatedItems().length, page.has_more, page.next_offset]).toEqual([2, true, 2]);
    });

    it('a deleted key is 404', async () => {
      const created = await rig.sdk().apiKeys.create({ name: 'doomed' });
      await rig.sdk().apiKeys.delete(created.id);
      await expect(rig.sdk().apiKeys.retrieve(created.id)).rejects.toBeInstanceOf(NotFoundError);
    });

    it('include_deleted shows a deleted key with deleted_at', async () => {
      const created = await rig.sdk().apiKeys.create({ name: 'audited' });
      await rig.sdk().apiKeys.delete(created.id);
      const key = await rig.sdk().apiKeys.retrieve(created.id, { include_deleted: true });
      expect(key.deleted_at).toEqual(expect.stringMatching(/Z$/));
    });

    it('a key cannot delete itself', async () => {
      const created = await rig.sdk().apiKeys.create({ name: 'self-deleting' });
      const error = await rejectionOf(rig.sdk(created.key).apiKeys.delete(created.id));
      expect(error).toBeInstanceOf(PermissionDeniedError);
    });

    it('a deleted key no longer authenticates', async () => {
      const created = await rig.sdk().apiKeys.create({ name: 'revoked' });
      await rig.sdk().apiKeys.delete(created.id);
      const error = await rejectionOf(rig.sdk(created.key).projects.list());
      expect((error as APIError).status).toBe(401);
    });
  });
});
