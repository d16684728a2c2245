// Who may call what on the gateway (docs/gateway.md, §4): missing, malformed, unknown, expired and
// deleted keys are 401; a project-scoped key is 403 on another project and its browsers, on
// org-level operations, and on org-wide keys; an org-wide key may do everything. The 403s on
// browser paths come before any forwarding, so the registered agents need not exist.

import { AuthenticationError, PermissionDeniedError } from '@onkernel/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '../../src/api-key.ts';
import { BACKENDS, GatewayRig, rejectionOf, TestStorages, uniqueName } from './support/gateway-harness.ts';

const storages = new TestStorages();
afterAll(() => storages.close());

/** The 401 cases: the Authorization header each sends (null: none). */
const UNAUTHENTICATED = ['missing', 'malformed scheme', 'bearer without a key', 'unknown key', 'expired key', 'deleted key'] as const;
type Unauthenticated = (typeof UNAUTHENTICATED)[number];

describe.each(BACKENDS)('authentication and permissions on %s', (backend) => {
  let rig: GatewayRig;
  /** Project A holds the scoped key; project B is the other project. */
  let projectA: { id: string; name: string };
  let projectB: { id: string; name: string };
  let scopedKey: string;
  let scopedKeyId: string;
  let browserA: string;
  let browserB: string;
  let orgBrowser: string;
  const headers: Partial<Record<Unauthenticated, string | null>> = {};

  beforeAll(async () => {
    rig = await GatewayRig.start(await storages.fresh(backend));
    const admin = rig.sdk();
    projectA = await admin.projects.create({ name: uniqueName('project-a') });
    projectB = await admin.projects.create({ name: uniqueName('project-b') });
    const scoped = await admin.apiKeys.create({ name: 'scoped to A', project_id: projectA.id });
    scopedKey = scoped.key;
    scopedKeyId = scoped.id;
    // Registrations only: nothing listens at these addresses, and none is ever called here.
    browserA = uniqueName('browser-a');
    browserB = uniqueName('browser-b');
    orgBrowser = uniqueName('browser-org');
    for (const [session_id, project_id] of [
      [browserA, projectA.id],
      [browserB, projectB.id],
      [orgBrowser, null],
    ] as const) {
      const response = await rig.registerBrowser({ session_id, agent_url: 'http://127.0.0.1:9', agent_token: 'agent-token', project_id });
      if (response.status !== 201) throw new Error(`registration failed: ${response.status} ${await response.text()}`);
    }
    const deleted = await admin.apiKeys.create({ name: 'deleted' });
    await admin.apiKeys.delete(deleted.id);
    headers.missing = null;
    headers['malformed scheme'] = `Basic ${Buffer.from('user:pass').toString('base64')}`;
    headers['bearer without a key'] = 'Bearer';
    headers['unknown key'] = `Bearer ${generateApiKey().key}`;
    headers['expired key'] = `Bearer ${await rig.createKey({ expiresAt: Date.now() - 1 })}`;
    headers['deleted key'] = `Bearer ${deleted.key}`;
  });
  afterAll(() => rig?.close());

  async function callWith(authorization: string | null, method: string, path: string): Promise<Response> {
    const init: RequestInit = { method, headers: authorization === null ? {} : { authorization } };
    return fetch(`${rig.url}${path}`, init);
  }

  describe('401 unauthorized', () => {
    it.each(UNAUTHENTICATED)('a %s is 401 unauthorized with WWW-Authenticate: Bearer', async (which) => {
      const response = await callWith(headers[which]!, 'GET', '/org/projects');
      const body = (await response.json()) as { code: string };
      expect([response.status, body.code, response.headers.get('www-authenticate')]).toEqual([401, 'unauthorized', 'Bearer']);
    });

    it.each(UNAUTHENTICATED)('a %s is 401 on a browser path before the id is looked up', async (which) => {
      const response = await callWith(headers[which]!, 'GET', '/browsers/no-such-session/telemetry');
      expect(response.status).toBe(401);
    });

    it('the SDK reports a 401 as AuthenticationError', async () => {
      const error = await rejectionOf(rig.sdk(generateApiKey().key).projects.list());
      expect(error).toBeInstanceOf(AuthenticationError);
    });

    it('/healthz needs no key', async () => {
      expect((await callWith(null, 'GET', '/healthz')).status).toBe(200);
    });
  });

  describe('unauthenticated responses reveal no session id', () => {
    const PATHS: Array<[string, string]> = [
      ['GET', ''],
      ['PATCH', ''],
      ['DELETE', ''],
      ['GET', '/telemetry'],
      ['GET', '/telemetry/stream'],
      ['POST', '/computer/batch'],
      ['PUT', '/fs/write_file?path=/tmp/x'],
      ['GET', '/no-such-subpath'],
    ];

    /** Status, headers and body, with `id` replaced, so two sessions' answers compare. */
    async function answer(method: string, path: string, id: string, authorization: string | null) {
      const response = await callWith(authorization, method, path.replace('{id}', id));
      const headers: string[] = [];
      response.headers.forEach((value, name) => {
        if (name !== 'date' && name !== 'content-length') headers.push(`${name}: ${value}`);
      });
      const text = JSON.stringify([response.status, headers, await response.text()]);
      return { text, generic: text.split(id).join('{id}') };
    }

    it.each(PATHS)('%s /browsers/{id}%s: a registered id gets the answer an unknown id gets', async (method, suffix) => {
      for (const authorization of [null, headers['unknown key']!]) {
        const registered = await answer(method, `/browsers/{id}${suffix}`, browserA, authorization);
        const unknown = await answer(method, `/browsers/{id}${suffix}`, uniqueName('never-registered'), authorization);
        expect(registered.generic).toBe(unknown.generic);
      }
    });

    it.each(PATHS.filter(([, suffix]) => suffix !== '/no-such-subpath'))('%s /browsers/{id}%s: the 401 does not name the session', async (method, suffix) => {
      const { text } = await answer(method, `/browsers/{id}${suffix}`, browserA, null);
      expect([text.includes('401'), text.includes(browserA)]).toEqual([true, false]);
    });

    it.each(['/healthz', '/', '/browsers', '/org/projects', '/metrics', '/openapi.json'])('GET %s without a key names no registered session', async (path) => {
      const text = await (await callWith(null, 'GET', path)).text();
      expect([browserA, browserB, orgBrowser].filter((id) => text.includes(id))).toEqual([]);
    });
  });

  describe('a project-scoped key', () => {
    it('reads its own project', async () => {
      await expect(rig.sdk(scopedKey).projects.retrieve(projectA.id)).resolves.toMatchObject({ id: projectA.id });
    });

    it('lists only its own project', async () => {
      const page = await rig.sdk(scopedKey).projects.list({ limit: 100 });
      expect(page.getPaginatedItems().map((p) => p.id)).toEqual([projectA.id]);
    });

    it('updates its own project', async () => {
      await expect(rig.sdk(scopedKey).projects.update(projectA.id, { status: 'active' })).resolves.toMatchObject({ id: projectA.id });
    });

    it.each([
      ['GET', 'id'],
      ['GET', 'name'],
      ['PATCH', 'id'],
      ['DELETE', 'id'],
    ])('%s on another project by %s is 403 forbidden', async (method, by) => {
      const ref = by === 'id' ? projectB.id : projectB.name;
      const init: RequestInit & { key: string } = { method, key: scopedKey };
      if (method === 'PATCH') Object.assign(init, { headers: { 'content-type': 'application/json' }, body: '{"status":"archived"}' });
      const response = await rig.fetch(`/org/projects/${encodeURIComponent(ref)}`, init);
      expect([response.status, ((await response.json()) as { code: string }).code]).toEqual([403, 'forbidden']);
    });

    it('the SDK reports a cross-project retrieve as PermissionDeniedError', async () => {
      await expect(rig.sdk(scopedKey).projects.retrieve(projectB.id)).rejects.toBeInstanceOf(PermissionDeniedError);
    });

    it('cannot create projects', async () => {
      await expect(rig.sdk(scopedKey).projects.create({ name: uniqueName('not-allowed') })).rejects.toBeInstanceOf(PermissionDeniedError);
    });

    it('cannot register browsers', async () => {
      const response = await rig.fetch('/browsers', {
        method: 'POST',
        key: scopedKey,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ session_id: uniqueName('s'), agent_url: 'http://127.0.0.1:9', agent_token: 't', project_id: projectA.id }),
      });
      expect(response.status).toBe(403);
    });

    const BROWSER_PATHS: Array<[string, string, RequestInit?]> = [
      ['GET', ''],
      ['PATCH', '', { headers: { 'content-type': 'application/json' }, body: '{"telemetry":{"enabled":true}}' }],
      ['DELETE', ''],
      ['GET', '/telemetry'],
      ['GET', '/telemetry/stream'],
      ['POST', '/computer/batch', { headers: { 'content-type': 'application/json' }, body: '{"actions":[{"type":"sleep","sleep":{"duration_ms":1}}]}' }],
      ['PUT', '/fs/write_file?path=/tmp/x', { headers: { 'content-type': 'application/octet-stream' }, body: 'data' }],
    ];

    it.each(BROWSER_PATHS)("%s /browsers/{id}%s of another project's browser is 403 forbidden", async (method, suffix, init) => {
      const response = await rig.fetch(`/browsers/${browserB}${suffix}`, { method, key: scopedKey, ...init });
      expect([response.status, ((await response.json()) as { code: string }).code]).toEqual([403, 'forbidden']);
    });

    it('an org-wide browser (no project) is 403 for a project-scoped key', async () => {
      expect((await rig.fetch(`/browsers/${orgBrowser}`, { key: scopedKey })).status).toBe(403);
    });

    it('its own browser is forwarded (502 here: no agent listens)', async () => {
      const response = await rig.fetch(`/browsers/${browserA}`, { key: scopedKey });
      expect([response.status, ((await response.json()) as { code: string }).code]).toEqual([502, 'browser_unavailable']);
    });

    it('cannot read an org-wide key', async () => {
      const admin = (await rig.sdk().apiKeys.list({ name: 'admin' })).getPaginatedItems()[0]!;
      await expect(rig.sdk(scopedKey).apiKeys.retrieve(admin.id)).rejects.toBeInstanceOf(PermissionDeniedError);
    });

    it('reads itself', async () => {
      await expect(rig.sdk(scopedKey).apiKeys.retrieve(scopedKeyId)).resolves.toMatchObject({ project_id: projectA.id });
    });

    it('lists only keys of its project', async () => {
      const keys = (await rig.sdk(scopedKey).apiKeys.list({ limit: 100 })).getPaginatedItems();
      expect(new Set(keys.map((k) => k.project_id))).toEqual(new Set([projectA.id]));
    });

    it('creates keys in its own project when no project is given', async () => {
      await expect(rig.sdk(scopedKey).apiKeys.create({ name: 'made by scoped' })).resolves.toMatchObject({ project_id: projectA.id });
    });

    it('cannot create an org-wide key', async () => {
      await expect(rig.sdk(scopedKey).apiKeys.create({ name: 'escalation', project_id: null })).rejects.toBeInstanceOf(PermissionDeniedError);
    });

    it('cannot create a key in another project', async () => {
      await expect(rig.sdk(scopedKey).apiKeys.create({ name: 'sideways', project_id: projectB.id })).rejects.toBeInstanceOf(PermissionDeniedError);
    });

    it("cannot delete another project's key", async () => {
      const other = await rig.sdk().apiKeys.create({ name: 'in B', project_id: projectB.id });
      await expect(rig.sdk(scopedKey).apiKeys.delete(other.id)).rejects.toBeInstanceOf(PermissionDeniedError);
    });
  });

  describe('an org-wide key', () => {
    it('reads any project', async () => {
      await expect(rig.sdk().projects.retrieve(projectB.id)).resolves.toMatchObject({ id: projectB.id });
    });

    it('lists every project', async () => {
      const ids = (await rig.sdk().projects.list({ limit: 100 })).getPaginatedItems().map((p) => p.id);
      expect(ids).toEqual(expect.arrayContaining([projectA.id, projectB.id]));
    });

    it('reaches the browsers of any project (502 here: no agent listens)', async () => {
      const statuses = await Promise.all([browserA, browserB, orgBrowser].map(async (id) => (await rig.fetch(`/browsers/${id}`)).status));
      expect(statuses).toEqual([502, 502, 502]);
    });

    it('reads a project-scoped key', async () => {
      await expect(rig.sdk().apiKeys.retrieve(scopedKeyId)).resolves.toMatchObject({ id: scopedKeyId });
    });
  });
});
