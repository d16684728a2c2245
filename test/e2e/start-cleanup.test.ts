// startAgent's cleanup stack (src/agent.ts): a failure at any start-up step, or at a point inside
// one, closes everything start-up opened so far, the last first, and the failure is what the
// caller gets. Nothing is left behind: no browser process, no browser profile, no open file.

import { execFileSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { START_STEPS, startAgentWithConfig, type AgentRuntime, type StartStep } from '../../src/agent.ts';
import { resolveConfig } from '../../src/config.ts';
import { KMSG_PATH } from '../../src/telemetry/kmsg-reader.ts';

const dataRoot = mkdtempSync(path.join(tmpdir(), 'bta-start-cleanup-'));
afterAll(() => rmSync(dataRoot, { recursive: true, force: true }));

/** Whether this process may read the kernel log: the kmsg step opens it only then. */
const kmsgReadable = (() => {
  try {
    closeSync(openSync(KMSG_PATH, constants.O_RDONLY | constants.O_NONBLOCK));
    return true;
  } catch {
    return false;
  }
})();

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

/** The embedded browser's profile directories of this process (src/browser/chromium-launcher.ts). */
function profileDirs(): string[] {
  return readdirSync(tmpdir()).filter((name) => name.startsWith(`bta-chromium-${process.pid}-`));
}

/** What this process's file descriptors point at: files, sockets, pipes, /dev/kmsg. */
function openFiles(): string[] {
  return readdirSync('/proc/self/fd').flatMap((fd) => {
    try {
      return [readlinkSync(`/proc/self/fd/${fd}`)];
    } catch {
      return []; // the descriptor of the directory listing itself, closed meanwhile
    }
  });
}

interface Snapshot {
  processes: string[];
  profiles: string[];
  files: string[];
}

function snapshot(): Snapshot {
  return { processes: chromiumChildren(), profiles: profileDirs(), files: openFiles() };
}

/**
 * What is there now and was not before. The store's SQLite files are left out: the store closes
 * its database, but the SQLite binding (@photostructure/sqlite 1.2.1, unlike node:sqlite) lets
 * the file go only once the statements prepared on it are garbage-collected; the `closed` hook
 * shows the store was closed.
 */
function leftSince(before: Snapshot): Snapshot {
  const now = snapshot();
  const files = [...before.files];
  const newFiles = now.files.filter((file) => {
    const at = files.indexOf(file);
    if (at === -1) return true;
    files.splice(at, 1);
    return false;
  });
  return {
    processes: now.processes.filter((p) => !before.processes.includes(p)),
    profiles: now.profiles.filter((p) => !before.profiles.includes(p)),
    files: newFiles.filter((file) => !(file.startsWith(dataRoot) && /\.sqlite(-wal|-shm)?$/.test(file))),
  };
}

const NOTHING: Snapshot = { processes: [], profiles: [], files: [] };

/** Starts an agent that fails where `hooks` throw; resolves to what it opened and closed. */
async function failedStart(name: string, hooks: (injected: Error, opened: StartStep[]) => NonNullable<AgentRuntime['startHooks']>) {
  const dataDir = path.join(dataRoot, name);
  // OTLP on (to a port nobody listens on: nothing is sent before the failure), embedded browser.
  const config = resolveConfig({ port: 0, dataDir, otlp: { url: 'http://127.0.0.1:9/v1/logs' }, screenshots: false });
  const opened: StartStep[] = [];
  const closed: StartStep[] = [];
  const injected = new Error(`injected failure: ${name}`);
  const started = startAgentWithConfig(config, {
    logger: pino({ level: 'silent' }),
    startHooks: { ...hooks(injected, opened), closed: (step) => closed.push(step) },
  });
  await expect(started).rejects.toBe(injected);
  return { opened, closed };
}

/** Each step that opened something is closed, once, in reverse (the kmsg step opens nothing when the kernel log is not readable). */
function closedInReverse(opened: StartStep[]): StartStep[] {
  return opened.filter((step) => step !== 'kmsg' || kmsgReadable).reverse();
}

describe('start-up that fails at a step', () => {
  it.each(START_STEPS.map((step, i) => [step, i] as const))(
    'closes what the steps before %s opened, the last first, and leaves nothing behind',
    async (failing, index) => {
      const before = snapshot();
      const { opened, closed } = await failedStart(`before-${failing}`, (injected, opened) => ({
        beforeStep(step) {
          if (step === failing) throw injected;
          opened.push(step);
        },
      }));
      expect(opened).toEqual(START_STEPS.slice(0, index));
      expect(closed).toEqual(closedInReverse(opened));
      await vi.waitFor(() => expect(leftSince(before)).toEqual(NOTHING), { timeout: 5000 });
    },
    60_000,
  );
});

describe('start-up that fails inside a step', () => {
  const points: Array<[StartStep, string]> = [
    // The database is open; nothing else is yet.
    ['store', 'opened'],
    // The embedded browser runs, its profile is on disk, nothing is connected to it yet.
    ['browser', 'launched'],
    // The server listens; every step is done but the agent is not returned yet.
    ['listen', 'listening'],
  ];
  it.each(points)(
    'closes everything when %s fails once %s, and leaves nothing behind',
    async (failing, point) => {
      const before = snapshot();
      let browserSeen = false;
      const { opened, closed } = await failedStart(`${failing}-${point}`, (injected, opened) => ({
        beforeStep: (step) => opened.push(step),
        reached(step, at) {
          if (step === 'browser' && at === 'launched') browserSeen = chromiumChildren().length > before.processes.length;
          if (step === failing && at === point) throw injected;
        },
      }));
      expect(opened).toEqual(START_STEPS.slice(0, START_STEPS.indexOf(failing) + 1));
      expect(closed).toEqual(closedInReverse(opened.filter((step) => step !== 'listen')));
      // Once the browser step began, the fault came after the browser was running: it is there to be left behind.
      expect(browserSeen).toBe(opened.includes('browser'));
      await vi.waitFor(() => expect(leftSince(before)).toEqual(NOTHING), { timeout: 5000 });
    },
    60_000,
  );
});
