import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type Agent } from '../../src/agent.ts';
import { consoleText, Driver, SseClient } from './support/harness.ts';

const SECRET = 'super-secret-token-value-1234567890';
const LIMITED = 'limited-secret-token-value-0987654321';
const WRONG = 'wrong-secret-token-value-5555555555';

/** A full e2e session with every kind of request, logged at trace level: no token anywhere. */
describe('logs', () => {
  const lines: string[] = [];
  let agent: Agent;

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(...String(chunk).split('\n').filter(Boolean));
        done();
      },
    });
    agent = await startAgent({
      port: 0,
      token: SECRET,
      tokens: [{ token: LIMITED, scopes: ['telemetry:read'] }],
      screenshots: false,
      logger: pino({ level: 'trace' }, sink),
    });
    const base = `${agent.url}/browsers/${agent.sessionId}`;
    const auth = (token: string) => ({ authorization: `Bearer ${token}` });
    const stream = await SseClient.open(`${base}/telemetry?replay=all`, SECRET);
    const driver = await Driver.connect(agent.browserWsUrl);
    const tab = await driver.firstPage();
    await tab.ready(stream);
    await tab.evaluate(`console.log('logged ${SECRET.slice(0, 4)}')`);
    await stream.waitForEvent('console_log', (e) => consoleText(e) === `logged ${SECRET.slice(0, 4)}`);
    await fetch(base, { headers: auth(SECRET) });
    await fetch(base, { headers: auth(LIMITED) });
    await fetch(base, { headers: auth(WRONG) });
    await fetch(base, { method: 'PATCH', headers: { ...auth(LIMITED), 'content-type': 'application/json' }, body: '{"telemetry":{}}' });
    await fetch(base, { method: 'PATCH', headers: { ...auth(SECRET), 'content-type': 'application/json' }, body: `{"telemetry":{"x":"${SECRET}"}}` });
    await fetch(`${agent.url}/nope?token=${WRONG}`, { headers: auth(SECRET) });
    await fetch(`${base}/telemetry`, { headers: { ...auth(SECRET), 'last-event-id': 'garbage' } });
    await fetch(`${agent.url}/healthz`);
    await driver.close();
    await fetch(base, { method: 'DELETE', headers: auth(SECRET) });
    await stream.waitForEnd();
    await agent.close();
  });
  afterAll(() => agent?.close());

  it('never contain a token, valid or not, nor the Authorization header', () => {
    const all = lines.join('\n');
    expect(all).not.toContain(SECRET);
    expect(all).not.toContain(LIMITED);
    expect(all.toLowerCase()).not.toContain('authorization');
    expect(all).not.toContain('Bearer');
  });

  it('are JSON lines with one line per completed request', () => {
    const parsed = lines.map((l) => JSON.parse(l) as { msg: string; req?: { method: string; url: string }; res?: { statusCode: number } });
    const completed = parsed.filter((l) => l.msg === 'request completed' || l.msg === 'request errored');
    const statuses = completed.map((l) => `${l.req!.method} ${l.res!.statusCode}`);
    // The stream's own line comes when DELETE ends it, just before DELETE's.
    expect(statuses).toEqual(['GET 200', 'GET 200', 'GET 401', 'PATCH 403', 'PATCH 400', 'GET 404', 'GET 400', 'GET 200', 'GET 200', 'DELETE 204']);
    expect(parsed.filter((l) => l.msg === 'listening')).toHaveLength(1);
    expect(parsed.filter((l) => l.msg === 'stream opened')).toHaveLength(1);
  });
});
