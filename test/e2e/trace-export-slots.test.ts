// The trace export's slots cover the building only (docs/export.md "Limits"): two clients that start
// an export and do not read it keep no slot once their archives are built (the rest waits in the
// spool), so a third export completes while they still have not read, and they get their whole
// archive when they do. The built agent on a store of incompressible console text (about 24 MB,
// more than the socket buffers take), as users run it.

import { randomBytes } from 'node:crypto';
import { request, type IncomingMessage } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TelemetryEvent } from '../../injected/schema.ts';
import { AgentProcess, cleanEnv } from './support/agent-process.ts';
import { seedStore } from './support/export-memory.ts';
import { unzipEntries } from './support/playwright-trace.ts';

const TOKEN = 'trace-slots-token';
const SESSION = 'traceslots0000000001';
const EVENTS = 3_000;
const LAST = `the last stored line ${EVENTS}`;

let dataDir: string;
let agent: AgentProcess | undefined;

function* consoleLines(): Generator<TelemetryEvent> {
  const t0 = Date.now() * 1000 - 60_000_000;
  const ctx = { session_id: 'S1', target_id: 'T1', target_type: 'page', frame_id: 'T1', url: 'http://127.0.0.1/p.html', nav_seq: 1 };
  for (let i = 1; i <= EVENTS; i++) {
    const text = i === EVENTS ? LAST : randomBytes(6_000).toString('base64');
    yield { ts: t0 + i * 1000, type: 'console_log', source: { kind: 'cdp' }, data: { ...ctx, level: 'log', text, args: [] } };
  }
}

/** A trace export whose response has begun and is not read (paused). */
function unreadExport(url: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/browsers/${SESSION}/trace`, { headers: { Authorization: `Bearer ${TOKEN}` } }, (res) => {
      res.pause();
      resolve(res);
    });
    req.on('error', reject);
    req.end();
  });
}

async function readAll(res: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

beforeAll(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'bta-trace-slots-'));
  seedStore(dataDir, SESSION, consoleLines());
});

afterAll(async () => {
  await agent?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('trace export slots', () => {
  it('let a third export complete while two clients do not read theirs, who then get the whole archive', { timeout: 240_000 }, async () => {
    agent = AgentProcess.start(['--port', '0', '--token', TOKEN, '--session-id', SESSION, '--screenshots', 'off'], cleanEnv({ DATA_DIR: dataDir }));
    const { url } = await agent.listening();

    const unread = [await unreadExport(url), await unreadExport(url)];
    expect(unread.map((res) => res.statusCode)).toEqual([200, 200]);

    // Both slots are taken by then; before the fix this waited for as long as they did not read.
    const third = await fetch(`${url}/browsers/${SESSION}/trace`, { headers: { Authorization: `Bearer ${TOKEN}` }, signal: AbortSignal.timeout(90_000) });
    expect(third.status).toBe(200);
    const thirdZip = Buffer.from(await third.arrayBuffer());
    expect(unzipEntries(thirdZip).get('trace.trace')?.toString()).toContain(LAST);

    for (const res of unread) {
      res.resume();
      const zip = await readAll(res);
      expect(zip.length).toBeGreaterThan(16 * 1024 * 1024);
      expect(unzipEntries(zip).get('trace.trace')?.toString()).toContain(LAST);
    }
  });
});
