// startAgent's cleanup stack (src/agent.ts): a failure at any start-up step closes everything the
// steps before it opened, the last first, and the failure is what the caller gets.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { START_STEPS, startAgentWithConfig, type StartStep } from '../../src/agent.ts';
import { resolveConfig } from '../../src/config.ts';

const dataRoot = mkdtempSync(path.join(tmpdir(), 'bta-start-cleanup-'));
afterAll(() => rmSync(dataRoot, { recursive: true, force: true }));

/** Chromium processes this test process started (the embedded browser is its child). */
function chromiumChildren(): string[] {
  let out = '';
  try {
    out = execFileSync('ps', ['-o', 'pid=,stat=,comm=', '--ppid', String(process.pid)], { encoding: 'utf8' });
  } catch {
    // ps exits 1 when no process matches.
  }
  return out
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => /chrom/i.test(line) && !/ Z/.test(line));
}

describe('start-up that fails at a step', () => {
  it.each(START_STEPS.map((step, i) => [step, i] as const))(
    'closes what the steps before %s opened, the last first',
    async (failing, index) => {
      const dataDir = path.join(dataRoot, failing);
      // OTLP on (to a port nobody listens on: nothing is sent before the failure), embedded browser.
      const config = resolveConfig({ port: 0, dataDir, otlp: { url: 'http://127.0.0.1:9/v1/logs' }, screenshots: false });
      const opened: StartStep[] = [];
      const closed: StartStep[] = [];
      const before = chromiumChildren();
      const injected = new Error(`injected failure at ${failing}`);
      const started = startAgentWithConfig(config, {
        logger: pino({ level: 'silent' }),
        startHooks: {
          beforeStep(step) {
            if (step === failing) throw injected;
            opened.push(step);
          },
          closed: (step) => closed.push(step),
        },
      });
      await expect(started).rejects.toBe(injected);
      expect(opened).toEqual(START_STEPS.slice(0, index));
      // Every step before the failing one opened something, and each is closed, in reverse.
      expect(closed).toEqual([...opened].reverse());
      // The embedded browser, when it was launched, is stopped.
      expect(chromiumChildren()).toEqual(before);
    },
    60_000,
  );
});
