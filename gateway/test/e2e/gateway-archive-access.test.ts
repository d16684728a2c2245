// The archive's routes without any agent (docs/gateway.md "Reading", "Listing", "Retention"):
// who may read what (an org-wide key everything, a project-scoped key its project's sessions
// only: another project's is 403, an unknown one 404, no key 401), the error body for every bad
// input, the session list's paging and filters, a live session whose agent cannot be reached
// read from the archive alone, retention (old events, ended sessions, a deleted project's
// sessions), and registering an id again. Events are put in the archive directly; the
// registered agents' addresses have nothing listening.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { archivedEvent } from '../../src/archive/event-row.ts';
import { BACKENDS, GatewayRig, TestStorages, uniqueName } from './support/gateway-harness.ts';

const storages = new TestStorages();
afterAll(() => storages.close());

const NOWHERE = 'http://127.0.0.1:9';
const DAY_US = 86_400_000_000;

/** An envelope JSON text shaped like the agent's. */
function envelope(seq: number, type: string, tsUs: number, extra: Record<string, unknown> = {}): string {
  const category = type.startsWith('console') ? 'console' : type.startsWith('network') ? 'network' : 'page';
  return `{"seq":${seq},"event":{"ts":${tsUs},"type":"${type}","category":"${category}","source":{"kind":"cdp"},"data":${JSON.stringify({ target_id: 'T1', nav_seq: 1, ...extra })}}}`;
}

async function codeAndField(response: Response): Promise<[number, string, string | undefined]> {
  const body = (await response.json()) as { code: string; details?: Array<{ field?: string }> };
  return [response.status, body.code, body.details?.[0]?.field];
}

describe.each(BACKENDS)('archive routes on %s', (backend) => {
  let rig: GatewayRig;
  let projectA: string;
  let projectB: string;
  let keyA: string;
  /** A live session of project A (its agent unreachable), an ended one of A, one of B, one of no project. */
  let liveA: string;
  let endedA: string;
  let endedB: string;
  let orgSession: string;

  async function register(projectId: string | null, events: number, ended: boolean): Promise<string> {
    const id = uniqueName('archived');
    const response = await rig.registerBrowser({ session_id: id, agent_url: NOWHERE, agent_token: 't', project_id: projectId });
    if (response.status !== 201) throw new Error(await response.text());
    const browser = (await rig.gateway.store.findBrowser(id))!;
    const now = Date.now() * 1000;
    const rows = Array.from({ length: events }, (_, i) => {
      const seq = i + 1;
      const type = seq % 10 === 0 ? 'console_error' : seq % 7 === 0 ? 'network_loading_failed' : 'console_log';
      return {
        sessionKey: browser.sessionKey,
        event: archivedEvent(
          envelope(seq, type, now - (events - seq) * 1000, type === 'network_loading_failed' ? { canceled: false } : { text: `line ${seq}` }),
        ),
      };
    });
    if (rows.length > 0) await rig.gateway.archive.store.inserts.insert(rows);
    if (ended) await rig.gateway.archive.store.markEnded(browser.sessionKey, 'deleted');
    return id;
  }

  beforeAll(async () => {
    rig = await GatewayRig.start(await storages.fresh(backend), { archiveFollow: false });
    const admin = rig.sdk();
    projectA = (await admin.projects.create({ name: uniqueName('archive-a') })).id;
    projectB = (await admin.projects.create({ name: uniqueName('archive-b') })).id;
    keyA = (await admin.apiKeys.create({ name: 'scoped to A', project_id: projectA })).key;
    liveA = await register(projectA, 30, false);
    endedA = await register(projectA, 100, true);
    endedB = await register(projectB, 20, true);
    orgSession = await register(null, 5, true);
  });
  afterAll(() => rig?.close());

  describe('who may read what', () => {
    const paths = (id: string) => [
      `/browsers/${id}/telemetry/events`,
      `/browsers/${id}/telemetry?replay=all`,
      `/browsers/${id}/telemetry/stream?replay=all`,
      `/browsers/${id}/har`,
    ];

    it.each([0, 1, 2, 3])("route %#: an org-wide key reads any project's ended session", async (i) => {
      const response = await rig.fetch(paths(endedB)[i]!);
      await response.text();
      expect(response.status).toBe(200);
    });

    it.each([0, 1, 2, 3])("route %#: a project-scoped key reads its project's ended session", async (i) => {
      const response = await rig.fetch(paths(endedA)[i]!, { key: keyA });
      await response.text();
      expect(response.status).toBe(200);
    });

    it.each([0, 1, 2, 3])("route %#: a project-scoped key is 403 forbidden on another project's session", async (i) => {
      expect((await codeAndField(await rig.fetch(paths(endedB)[i]!, { key: keyA }))).slice(0, 2)).toEqual([403, 'forbidden']);
    });

    it.each([0, 1, 2, 3])('route %#: a project-scoped key is 403 on a session of no project', async (i) => {
      expect((await rig.fetch(paths(orgSession)[i]!, { key: keyA })).status).toBe(403);
    });

    it.each([0, 1, 2, 3])('route %#: an unknown session is 404 not_found', async (i) => {
      expect((await codeAndField(await rig.fetch(paths('never-registered')[i]!))).slice(0, 2)).toEqual([404, 'not_found']);
    });

    it.each([...[0, 1, 2, 3].map((i) => (id: string) => paths(id)[i]!), () => '/browsers'])('route %#: no key is 401 unauthorized', async (path) => {
      const response = await rig.fetch(path(endedA), { key: null });
      expect([response.status, response.headers.get('www-authenticate')]).toEqual([401, 'Bearer']);
    });

    it("GET /browsers with a project-scoped key lists only its project's sessions", async () => {
      const listed = (await (await rig.fetch('/browsers?status=all', { key: keyA })).json()) as Array<{ session_id: string; project_id: string }>;
      expect(listed.map((s) => s.session_id).sort()).toEqual([liveA, endedA].sort());
    });

    it('GET /browsers?project_id=<its own> works for a project-scoped key', async () => {
      expect((await rig.fetch(`/browsers?status=all&project_id=${projectA}`, { key: keyA })).status).toBe(200);
    });

    it('GET /browsers?project_id=<another> is 403 for a project-scoped key', async () => {
      expect((await rig.fetch(`/browsers?project_id=${projectB}`, { key: keyA })).status).toBe(403);
    });

    it("GET /browsers with an org-wide key lists every project's sessions, project_id filters", async () => {
      const all = (await (await rig.fetch('/browsers?status=all&limit=100')).json()) as Array<{ session_id: string }>;
      const ofB = (await (await rig.fetch(`/browsers?status=all&project_id=${projectB}`)).json()) as Array<{ session_id: string }>;
      expect([[liveA, endedA, endedB, orgSession].every((id) => all.some((s) => s.session_id === id)), ofB.map((s) => s.session_id)]).toEqual([true, [endedB]]);
    });
  });

  describe('bad input gets the error body', () => {
    it.each([
      ['/browsers?limit=0', 'limit'],
      ['/browsers?limit=101', 'limit'],
      ['/browsers?offset=-1', 'offset'],
      ['/browsers?status=bogus', 'status'],
      ['/browsers?project_id=', 'project_id'],
      ['/browsers?color=red', 'color'],
      ['/browsers/{id}/telemetry/events?limit=0', 'limit'],
      ['/browsers/{id}/telemetry/events?limit=1001', 'limit'],
      ['/browsers/{id}/telemetry/events?offset=-1', 'offset'],
      ['/browsers/{id}/telemetry/events?order=sideways', 'order'],
      ['/browsers/{id}/telemetry/events?since=yesterday', 'since'],
      ['/browsers/{id}/telemetry/events?until=soon', 'until'],
      ['/browsers/{id}/telemetry/events?order=desc&since=5m', 'since'],
      ['/browsers/{id}/telemetry/events?category=bogus', 'category'],
      ['/browsers/{id}/telemetry/events?type=bogus', 'type'],
      ['/browsers/{id}/telemetry/events?nav_seq=first', 'nav_seq'],
      ['/browsers/{id}/telemetry/events?replay=all', 'replay'],
      ['/browsers/{id}/telemetry?replay=some', 'replay'],
      ['/browsers/{id}/telemetry?category=bogus', 'category'],
      ['/browsers/{id}/telemetry/stream?offset=1', 'offset'],
      ['/browsers/{id}/har?since=garbage', 'since'],
      ['/browsers/{id}/har?nav_seq=x', 'nav_seq'],
      ['/browsers/{id}/har?category=console', 'category'],
      // One rule with the agent (docs/events.md "Query parameters"): digits only, unknown is 400.
      ...['1e400', '18446744073709551616', '9007199254740992', '1.5', '0x10', '+1', '%201'].flatMap((v) => [
        [`/browsers/{id}/telemetry/events?offset=${v}`, 'offset'],
        [`/browsers?offset=${v}`, 'offset'],
      ]),
      ...['1e3', '1.0', '0x10', '+1'].flatMap((v) => [
        [`/browsers/{id}/telemetry/events?limit=${v}`, 'limit'],
        [`/browsers?limit=${v}`, 'limit'],
      ]),
      ['/browsers/{id}/telemetry/events?bogus=1', 'bogus'],
      ['/browsers/{id}/telemetry/stream?bogus=1', 'bogus'],
      ['/browsers/{id}/telemetry?replay=all&colour=red', 'colour'],
    ])('%s is 400 invalid_input naming %s', async (path, field) => {
      expect(await codeAndField(await rig.fetch(path.replace('{id}', endedA)))).toEqual([400, 'invalid_input', field]);
    });

    it.each(['yesterday', '-1', '1.5', '99999999999999999'])('a Last-Event-ID of %j is 400 invalid_input naming Last-Event-ID', async (value) => {
      expect(await codeAndField(await rig.fetch(`/browsers/${endedA}/telemetry`, { headers: { 'last-event-id': value } }))).toEqual([
        400,
        'invalid_input',
        'Last-Event-ID',
      ]);
    });
  });

  describe('reading', () => {
    it('an ended session is read from its first event by default (no 5-minute window)', async () => {
      const response = await rig.fetch(`/browsers/${endedA}/telemetry/events?limit=1000`);
      const events = (await response.json()) as Array<{ seq: number }>;
      expect([events.length, events[0]!.seq, response.headers.get('x-has-more'), response.headers.get('x-next-offset')]).toEqual([100, 1, 'false', '101']);
    });

    it('pages of an ended session continue with X-Next-Offset, filters applied in the page', async () => {
      const first = await rig.fetch(`/browsers/${endedA}/telemetry/events?type=console_error&limit=4`);
      const second = await rig.fetch(`/browsers/${endedA}/telemetry/events?type=console_error&limit=4&offset=${first.headers.get('x-next-offset')}`);
      const seqs = [...((await first.json()) as Array<{ seq: number }>), ...((await second.json()) as Array<{ seq: number }>)].map((e) => e.seq);
      expect([seqs, first.headers.get('x-has-more'), second.headers.get('x-has-more')]).toEqual([[10, 20, 30, 40, 50, 60, 70, 80], 'true', 'true']);
    });

    it('desc pages end at offset and go back to 0', async () => {
      const response = await rig.fetch(`/browsers/${endedA}/telemetry/events?order=desc&offset=3&limit=5`);
      const seqs = ((await response.json()) as Array<{ seq: number }>).map((e) => e.seq);
      expect([seqs, response.headers.get('x-has-more'), response.headers.get('x-next-offset')]).toEqual([[3, 2, 1], 'false', '0']);
    });

    it('an envelope comes back byte for byte as it went in', async () => {
      const [stored] = await rig.gateway.archive.store.page({
        sessionKey: (await rig.gateway.archive.store.findSession(endedA))!.sessionKey,
        filter: undefined,
        order: 'asc',
        minSeq: 7,
        limit: 1,
      });
      const text = await (await rig.fetch(`/browsers/${endedA}/telemetry/events?offset=7&limit=1`)).text();
      expect(text).toBe(`[${envelope(7, 'network_loading_failed', JSON.parse(stored!.eventJson).ts, { canceled: false })}]`);
    });

    it('a live session whose agent cannot be reached is read from the archive alone; X-Next-Offset is past its newest archived seq', async () => {
      const response = await rig.fetch(`/browsers/${liveA}/telemetry/events?offset=1&limit=1000`);
      const events = (await response.json()) as Array<{ seq: number }>;
      expect([response.status, events.length, response.headers.get('x-has-more'), response.headers.get('x-next-offset')]).toEqual([200, 30, 'false', '31']);
    });

    it('the stream of an ended session from Last-Event-ID sends the rest and ends, with the resume headers', async () => {
      const response = await rig.fetch(`/browsers/${endedA}/telemetry?type=console_error`, { headers: { 'last-event-id': '55' } });
      const ids = [...(await response.text()).matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
      expect([ids, response.headers.get('x-first-seq'), response.headers.get('x-resume')]).toEqual([[60, 70, 80, 90, 100], '56', 'exact']);
    });

    it('GET /browsers shows the counts: events, errors (console_error), failed requests (failed loads not canceled)', async () => {
      const listed = (await (await rig.fetch(`/browsers?status=ended&project_id=${projectA}`)).json()) as Array<Record<string, unknown>>;
      expect(listed).toEqual([
        expect.objectContaining({ session_id: endedA, status: 'ended', ended_reason: 'deleted', event_count: 100, error_count: 10, failed_request_count: 13 }),
      ]);
    });

    it('GET /browsers pages like the projects', async () => {
      const first = await rig.fetch('/browsers?status=all&limit=2');
      const second = await rig.fetch(`/browsers?status=all&limit=2&offset=${first.headers.get('x-next-offset')}`);
      const ids = [...((await first.json()) as Array<{ session_id: string }>), ...((await second.json()) as Array<{ session_id: string }>)].map(
        (s) => s.session_id,
      );
      expect([ids, first.headers.get('x-has-more'), second.headers.get('x-next-offset')]).toEqual([[liveA, endedA, endedB, orgSession], 'true', '0']);
    });

    it('GET /browsers?query= matches a substring of the session id', async () => {
      const listed = (await (await rig.fetch(`/browsers?status=all&query=${encodeURIComponent(endedB.slice(-6))}`)).json()) as Array<{ session_id: string }>;
      expect(listed.map((s) => s.session_id)).toContain(endedB);
    });

    it('the official SDK lists with status and include_deleted', async () => {
      const active: string[] = [];
      for await (const s of rig.sdk().browsers.list()) active.push((s as unknown as { session_id: string }).session_id);
      const all: string[] = [];
      for await (const s of rig.sdk().browsers.list({ include_deleted: true })) all.push((s as unknown as { session_id: string }).session_id);
      expect([active.includes(liveA), active.includes(endedA), all.includes(endedA)]).toEqual([true, false, true]);
    });
  });

  describe('registering an id again', () => {
    it('an ended session with nothing archived is replaced', async () => {
      const id = await register(null, 0, true);
      const response = await rig.registerBrowser({ session_id: id, agent_url: NOWHERE, agent_token: 't' });
      expect(response.status).toBe(201);
    });

    it('an ended session with an archive is 409 conflict, not retried', async () => {
      const response = await rig.registerBrowser({ session_id: orgSession, agent_url: NOWHERE, agent_token: 't' });
      expect([response.status, ((await response.json()) as { code: string }).code, response.headers.get('x-should-retry')]).toEqual([409, 'conflict', 'false']);
    });
  });

  describe('retention', () => {
    it('deletes events older than the retention from a live session, and takes them off its counts', async () => {
      const id = await register(projectA, 0, false);
      const browser = (await rig.gateway.store.findBrowser(id))!;
      const now = Date.now() * 1000;
      await rig.gateway.archive.store.inserts.insert([
        { sessionKey: browser.sessionKey, event: archivedEvent(envelope(1, 'console_error', now - 40 * DAY_US)) },
        { sessionKey: browser.sessionKey, event: archivedEvent(envelope(2, 'console_log', now - 31 * DAY_US)) },
        { sessionKey: browser.sessionKey, event: archivedEvent(envelope(3, 'console_error', now - 29 * DAY_US)) },
        { sessionKey: browser.sessionKey, event: archivedEvent(envelope(4, 'console_log', now)) },
      ]);
      await rig.gateway.archive.retention.run();
      const events = (await (await rig.fetch(`/browsers/${id}/telemetry/events?offset=1`)).json()) as Array<{ seq: number }>;
      const listed = (await (await rig.fetch(`/browsers?project_id=${projectA}`)).json()) as Array<{
        session_id: string;
        event_count: number;
        error_count: number;
      }>;
      const session = listed.find((s) => s.session_id === id)!;
      expect([events.map((e) => e.seq), session.event_count, session.error_count]).toEqual([[3, 4], 2, 1]);
    });

    it('removes an ended session whose last event is older than the retention: 404, and gone from the list', async () => {
      const id = await register(projectA, 0, false);
      const browser = (await rig.gateway.store.findBrowser(id))!;
      await rig.gateway.archive.store.inserts.insert([
        { sessionKey: browser.sessionKey, event: archivedEvent(envelope(1, 'console_log', (Date.now() - 31 * 86_400_000) * 1000)) },
      ]);
      await rig.gateway.archive.store.markEnded(browser.sessionKey, 'deleted');
      // Ended long ago too.
      await rig.gateway.store.db.run('UPDATE browsers SET deleted_at = ? WHERE session_key = ?', [Date.now() - 31 * 86_400_000, browser.sessionKey]);
      await rig.gateway.archive.retention.run();
      const listed = (await (await rig.fetch('/browsers?status=all&limit=100')).json()) as Array<{ session_id: string }>;
      const [count] = await rig.gateway.store.db.all<{ n: number }>('SELECT COUNT(*) AS n FROM archive_events WHERE session_key = ?', [browser.sessionKey]);
      expect([(await rig.fetch(`/browsers/${id}/telemetry/events`)).status, listed.some((s) => s.session_id === id), Number(count!.n)]).toEqual([
        404,
        false,
        0,
      ]);
    });

    it('deleting a project deletes its ended sessions and their events at once', async () => {
      const admin = rig.sdk();
      const project = (await admin.projects.create({ name: uniqueName('doomed') })).id;
      const id = await register(project, 50, true);
      const { sessionKey } = (await rig.gateway.archive.store.findSession(id))!;
      await admin.projects.delete(project);
      // Readers stop seeing it with the project; the rows go with the pass the delete started.
      const status = (await rig.fetch(`/browsers/${id}/telemetry/events`)).status;
      await rig.gateway.archive.retention.run();
      const [count] = await rig.gateway.store.db.all<{ n: number }>('SELECT COUNT(*) AS n FROM archive_events WHERE session_key = ?', [sessionKey]);
      const rows = await rig.gateway.store.db.all('SELECT session_id FROM browsers WHERE session_key = ?', [sessionKey]);
      expect([status, Number(count!.n), rows.length]).toEqual([404, 0, 0]);
    });
  });
});
