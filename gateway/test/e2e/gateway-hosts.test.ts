// DNS rebinding (the agent package's HTTP kit, host-policy.ts): the gateway answers only Host headers naming it —
// its listen address (on loopback: the loopback addresses and localhost; on 0.0.0.0: any IP
// address and localhost) and the names given with allowedHosts. Any other Host is 421
// misdirected_request with the error body, before authentication and routing, so a rebound page
// learns nothing, not even which paths exist.

import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, GatewayRig, TestStorages } from './support/gateway-harness.ts';

const storages = new TestStorages();
afterAll(() => storages.close());

interface Answer {
  status: number;
  body: string;
}

/** A request to the gateway with this Host header (undefined: none, as HTTP/1.0 allows). */
function requestWithHost(gatewayUrl: string, path: string, host: string | undefined, key?: string): Promise<Answer> {
  const url = new URL(gatewayUrl);
  return new Promise((resolve, reject) => {
    const headers: http.OutgoingHttpHeaders = {};
    if (key !== undefined) headers.authorization = `Bearer ${key}`;
    const req = http.request({ hostname: url.hostname, port: url.port, path, headers, setHost: false, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    if (host !== undefined) req.setHeader('host', host);
    req.on('error', reject);
    req.end();
  });
}

describe.each(BACKENDS)('Host headers on %s', (backend) => {
  describe('a gateway listening on 127.0.0.1 with allowedHosts gateway.example', () => {
    let rig: GatewayRig;
    let port: string;
    beforeAll(async () => {
      rig = await GatewayRig.start(await storages.fresh(backend), { host: '127.0.0.1', allowedHosts: ['gateway.example'] });
      port = new URL(rig.url).port;
    });
    afterAll(() => rig?.close());

    it.each(['127.0.0.1', 'localhost', '[::1]', 'gateway.example', 'GATEWAY.EXAMPLE.'])('answers Host %s', async (name) => {
      expect((await requestWithHost(rig.url, '/healthz', `${name}:${port}`)).status).toBe(200);
    });

    it.each(['attacker.example', '10.0.0.1', 'gateway.example.attacker.example'])('Host %s is 421 misdirected_request with the error body', async (name) => {
      const { status, body } = await requestWithHost(rig.url, '/healthz', `${name}:${port}`);
      const parsed = JSON.parse(body) as { code: string; message: string };
      expect([status, parsed.code, typeof parsed.message]).toEqual([421, 'misdirected_request', 'string']);
    });

    it('a rebound name is refused before authentication: a valid key gets 421 too', async () => {
      const { status, body } = await requestWithHost(rig.url, '/org/api_keys', `attacker.example:${port}`, rig.adminKey);
      expect([status, body.includes('masked_key')]).toEqual([421, false]);
    });

    it('a rebound name is refused before routing: an unknown path is 421, not 404', async () => {
      expect((await requestWithHost(rig.url, '/no/such/path', `attacker.example:${port}`)).status).toBe(421);
    });

    it('an HTTP/1.0 request without a Host header is 421', async () => {
      const head = await new Promise<string>((resolve, reject) => {
        const socket = net.connect(Number(port), '127.0.0.1', () => socket.end('GET /healthz HTTP/1.0\r\n\r\n'));
        let text = '';
        socket.setEncoding('latin1');
        socket.on('data', (chunk: string) => (text += chunk));
        socket.on('end', () => resolve(text));
        socket.on('error', reject);
      });
      expect(head.split('\r\n')[0]).toMatch(/^HTTP\/1\.[01] 421 /);
    });

    it('an HTTP/1.1 request without a Host header is 400 bad_request with the error body, as on the agent', async () => {
      const { status, body } = await requestWithHost(rig.url, '/healthz', undefined);
      expect([status, (JSON.parse(body) as { code: string }).code]).toEqual([400, 'bad_request']);
    });

    it('the official SDK through the listen address works as before', async () => {
      await expect(rig.sdk().projects.list()).resolves.toBeDefined();
    });
  });

  describe('a gateway listening on 0.0.0.0', () => {
    let rig: GatewayRig;
    let port: string;
    let url: string;
    beforeAll(async () => {
      rig = await GatewayRig.start(await storages.fresh(backend), { host: '0.0.0.0' });
      port = new URL(rig.url).port;
      url = `http://127.0.0.1:${port}`;
    });
    afterAll(() => rig?.close());

    it.each(['127.0.0.1', '10.1.2.3', '[2001:db8::1]', 'localhost'])('answers Host %s (an IP literal cannot be rebound)', async (name) => {
      expect((await requestWithHost(url, '/healthz', `${name}:${port}`)).status).toBe(200);
    });

    it('a name not allowed is 421', async () => {
      expect((await requestWithHost(url, '/healthz', `attacker.example:${port}`)).status).toBe(421);
    });
  });
});
