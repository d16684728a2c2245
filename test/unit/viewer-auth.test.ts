import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { sessionServer } from './support/session-server.ts';
import { cookieValues, MemoryTicketLedger, sessionPath, ViewerAuth } from '../../src/http/viewer-auth.ts';

const SESSION = 'sess_viewer';

describe('ViewerAuth', () => {
  let now = 1_700_000_000_000;
  const clock = () => now;

  it('redeems a ticket once for a cookie of the same session', async () => {
    const auth = new ViewerAuth({ now: clock });
    const { ticket, expiresAt } = auth.mintTicket(SESSION);
    expect(expiresAt).toBe(now + 60_000);
    const { cookie, expiresAt: cookieExpiry } = await auth.redeemTicket(ticket, SESSION);
    expect(cookieExpiry).toBe(now + 8 * 3600_000);
    expect(auth.verifyCookie(cookie, SESSION)).toEqual({ sessionId: SESSION, expiresAt: cookieExpiry, viewerId: expect.any(String), extraScopes: [] });
    await expect(auth.redeemTicket(ticket, SESSION)).rejects.toMatchObject({ status: 401, message: expect.stringContaining('already used') });
  });

  it('refuses an expired ticket, and a cookie once it expires', async () => {
    const auth = new ViewerAuth({ now: clock });
    const { ticket } = auth.mintTicket(SESSION);
    now += 60_000;
    await expect(auth.redeemTicket(ticket, SESSION)).rejects.toMatchObject({ status: 401, message: expect.stringContaining('expired') });
    const { cookie } = await auth.redeemTicket(auth.mintTicket(SESSION).ticket, SESSION);
    now += 8 * 3600_000 - 1;
    expect(auth.verifyCookie(cookie, SESSION)).toBeDefined();
    now += 1;
    expect(auth.verifyCookie(cookie, SESSION)).toBeUndefined();
  });

  it('refuses a ticket of another session, another key, or altered in any byte', async () => {
    const auth = new ViewerAuth({ now: clock });
    await expect(auth.redeemTicket(auth.mintTicket('other').ticket, SESSION)).rejects.toMatchObject({ status: 401 });
    await expect(auth.redeemTicket(new ViewerAuth({ now: clock }).mintTicket(SESSION).ticket, SESSION)).rejects.toMatchObject({ status: 401 });
    const { ticket } = auth.mintTicket(SESSION);
    for (let i = 0; i < ticket.length; i++) {
      const altered = `${ticket.slice(0, i)}${ticket[i] === 'A' ? 'B' : 'A'}${ticket.slice(i + 1)}`;
      await expect(auth.redeemTicket(altered, SESSION), `byte ${i}`).rejects.toMatchObject({ status: 401 });
    }
    // None of the forgeries used the real one up.
    await expect(auth.redeemTicket(ticket, SESSION)).resolves.toBeDefined();
  });

  it('keeps tickets and cookies apart: neither passes for the other', async () => {
    const auth = new ViewerAuth({ now: clock });
    const { ticket } = auth.mintTicket(SESSION);
    expect(auth.verifyCookie(ticket, SESSION)).toBeUndefined();
    const { cookie } = await auth.redeemTicket(ticket, SESSION);
    await expect(auth.redeemTicket(cookie, SESSION)).rejects.toMatchObject({ status: 401 });
    expect(auth.verifyCookie(cookie, 'other')).toBeUndefined();
  });

  it('works across instances that share a key (the gateway), carrying the subject', async () => {
    const key = Buffer.alloc(32, 7);
    const minter = new ViewerAuth({ key, now: clock });
    const checker = new ViewerAuth({ key, now: clock });
    const { cookie } = await checker.redeemTicket(minter.mintTicket(SESSION, 'key_123').ticket, SESSION);
    expect(minter.verifyCookie(cookie, SESSION)?.subject).toBe('key_123');
    expect(() => new ViewerAuth({ key: Buffer.alloc(16) })).toThrow(/32 bytes/);
  });

  it('carries the replay grant of its ticket into the cookie, and only when the ticket had it', async () => {
    const auth = new ViewerAuth({ now: clock });
    const withReplay = await auth.redeemTicket(auth.mintTicket(SESSION, undefined, ['replay']).ticket, SESSION);
    const without = await auth.redeemTicket(auth.mintTicket(SESSION).ticket, SESSION);
    expect([auth.verifyCookie(withReplay.cookie, SESSION)?.extraScopes, auth.verifyCookie(without.cookie, SESSION)?.extraScopes]).toEqual([['replay'], []]);
  });

  it('writes a Set-Cookie that is HttpOnly, SameSite=Strict and scoped to the session path', () => {
    const auth = new ViewerAuth();
    expect(auth.setCookieHeader('v', 'a b', { secure: false })).toBe('bta_viewer=v; Path=/browsers/a%20b/; Max-Age=28800; HttpOnly; SameSite=Strict');
    expect(auth.setCookieHeader('v', SESSION, { secure: true })).toMatch(/; Secure$/);
    expect(sessionPath(SESSION)).toBe(`/browsers/${SESSION}/`);
  });

  it('reads every value of the cookie from a Cookie header', () => {
    expect(cookieValues('a=1; bta_viewer=x.y; b=2;bta_viewer=z', 'bta_viewer')).toEqual(['x.y', 'z']);
    expect(cookieValues(undefined, 'bta_viewer')).toEqual([]);
    expect(cookieValues('bta_viewerx=1', 'bta_viewer')).toEqual([]);
  });
});

describe('MemoryTicketLedger', () => {
  it('claims an id once and forgets it after it expires', () => {
    let now = 0;
    const ledger = new MemoryTicketLedger(() => now);
    expect(ledger.claim('a', 100)).toBe(true);
    expect(ledger.claim('a', 100)).toBe(false);
    expect(ledger.claim('b', 150)).toBe(true);
    now = 120;
    expect(ledger.claim('c', 220)).toBe(true);
    expect(ledger.size).toBe(2);
  });
});

describe('the viewer routes', () => {
  let app: FastifyInstance | undefined;

  afterEach(async () => {
    vi.useRealTimers();
    await app?.close();
    app = undefined;
  });

  function server(): FastifyInstance {
    app = sessionServer({ sessionId: SESSION, tokens: [{ token: 'reader', scopes: ['telemetry:read'] }] });
    return app;
  }

  async function mint(instance: FastifyInstance): Promise<string> {
    const response = await instance.inject({
      method: 'POST',
      url: `/browsers/${SESSION}/viewer/sessions`,
      headers: { authorization: 'Bearer reader', host: 'agent.test:10001' },
    });
    expect(response.statusCode).toBe(201);
    const { url } = response.json<{ url: string }>();
    expect(url.startsWith(`http://agent.test:10001/browsers/${SESSION}/viewer/open?code=`)).toBe(true);
    return new URL(url).pathname + new URL(url).search;
  }

  it('answers an expired ticket 401 with the error body', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const instance = server();
    const path = await mint(instance);
    vi.setSystemTime(Date.now() + 60_001);
    const response = await instance.inject({ method: 'GET', url: path });
    expect(response.statusCode).toBe(401);
    expect(response.json()).toMatchObject({ code: 'unauthorized', message: 'the viewer link has expired' });
    expect(response.headers['set-cookie']).toBeUndefined();
  });

  it('answers the telemetry routes 401 once the cookie has expired', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const instance = server();
    const opened = await instance.inject({ method: 'GET', url: await mint(instance) });
    expect(opened.statusCode).toBe(303);
    const cookie = String(opened.headers['set-cookie']).split(';')[0]!;
    const history = () => instance.inject({ method: 'GET', url: `/browsers/${SESSION}/telemetry/events?limit=1`, headers: { cookie } });
    expect((await history()).statusCode).toBe(200);
    vi.setSystemTime(Date.now() + 8 * 3600_000);
    const expired = await history();
    expect(expired.statusCode).toBe(401);
    expect(expired.json()).toMatchObject({ code: 'unauthorized' });
  });
});
