// The operator's artefacts: the systemd unit and the container entrypoint (docs/operations.md).
// `systemd-analyze verify` and shellcheck run in `npm run lint`
// (scripts/lint-deploy.mjs), so this suite needs no system tools. No Docker engine here, so the entrypoint runs directly against this machine's
// Chromium, with the agent bundled into a world-readable directory so the unprivileged user it
// drops to can read it wherever the repository was cloned.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SseClient } from './support/harness.ts';

const root = process.cwd();

describe('systemd unit', () => {
  it('declares the restart policy, environment file, dedicated user, hardening, readiness and journal logging', () => {
    const unit = readFileSync(join(root, 'deploy/browser-telemetry-agent.service'), 'utf8');
    for (const line of [
      'Restart=on-failure',
      'EnvironmentFile=-/etc/browser-telemetry-agent/agent.env',
      'User=bta',
      'NoNewPrivileges=yes',
      'ProtectSystem=strict',
      'PrivateTmp=yes',
      'CapabilityBoundingSet=',
      'MemoryMax=',
      'ExecStartPost=/opt/browser-telemetry-agent/deploy/wait-healthy.sh',
      'Environment=MALLOC_ARENA_MAX=1',
      'Environment=MALLOC_MMAP_THRESHOLD_=65536',
      'StandardOutput=journal',
    ]) {
      expect(unit).toContain(line);
    }
  });
});

describe('container entrypoint', () => {
  let appDir: string;
  let child: ChildProcess;
  let stderr = '';

  beforeAll(async () => {
    appDir = mkdtempSync(join(tmpdir(), 'bta-image-'));
    mkdirSync(join(appDir, 'dist'));
    // As the image has it (deploy/Dockerfile): dist/ bundled like build.mjs (dependencies external)
    // beside node_modules. Hard links when the temp directory shares the checkout's file system
    // (instant), else a copy; either way readable by the unprivileged user wherever the checkout is.
    await build({
      entryPoints: [join(root, 'src/main.ts')],
      outfile: join(appDir, 'dist/main.js'),
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'esm',
      packages: 'external',
      logLevel: 'warning',
    });
    copyFileSync(join(root, 'package.json'), join(appDir, 'package.json'));
    try {
      execFileSync('cp', ['-al', join(root, 'node_modules'), join(appDir, 'node_modules')]);
    } catch {
      execFileSync('cp', ['-a', join(root, 'node_modules'), join(appDir, 'node_modules')]);
    }
    execFileSync('chmod', ['-R', 'a+rX', join(appDir, 'node_modules')]);
    copyFileSync(join(root, 'deploy/entrypoint.sh'), join(appDir, 'entrypoint.sh'));
    chmodSync(appDir, 0o755);
    for (const f of ['dist', 'dist/main.js', 'package.json', 'entrypoint.sh']) chmodSync(join(appDir, f), 0o755);
  });

  afterAll(() => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    rmSync(appDir, { recursive: true, force: true });
  });

  it('starts the agent and Chromium as a non-root user; SIGTERM stops both with exit 0 and leaves no process behind', async () => {
    child = spawn('sh', [join(appDir, 'entrypoint.sh'), '--port', '0', '--log-level', 'warn'], {
      env: { PATH: process.env.PATH, APP_DIR: appDir, RUN_AS: 'nobody', HOST: '127.0.0.1' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => (stderr += chunk));
    const command = await waitFor(() => /curl -N -H 'Authorization: Bearer (\S+)' (\S+)/.exec(stderr), 'the banner').catch((err: unknown) => {
      throw new Error(`${(err as Error).message}; stderr: ${stderr}`);
    });
    const [, token, streamUrl] = command;
    const stream = await SseClient.open(`${streamUrl}?replay=all`, token);
    expect(stream.status).toBe(200);

    const agentPid = child.pid!;
    const descendants = descendantsOf(agentPid);
    const chromium = descendants.filter((pid) => commandOf(pid).includes('chromium'));
    expect(chromium.length).toBeGreaterThan(0);
    for (const pid of [agentPid, ...chromium]) expect(uidOf(pid)).not.toBe(0);
    // Node runs with the memory settings the benchmark measured (README "Performance").
    expect(commandOf(agentPid)).toContain('--max-semi-space-size=4');
    const environ = readFileSync(`/proc/${agentPid}/environ`, 'utf8').split('\0');
    expect(environ).toContain('MALLOC_ARENA_MAX=1');
    expect(environ).toContain('MALLOC_MMAP_THRESHOLD_=65536');

    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const started = Date.now();
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(Date.now() - started).toBeLessThan(5000);
    await stream.waitForEnd();
    await waitFor(() => descendants.every((pid) => !isAlive(pid)) || undefined, 'every child process to be gone');
  });
});

async function waitFor<T>(check: () => T | null | undefined, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function descendantsOf(pid: number): number[] {
  const parents = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = parents.get(ppid) ?? [];
      list.push(Number(entry));
      parents.set(ppid, list);
    } catch {
      // gone meanwhile
    }
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const c of parents.get(p) ?? []) {
      out.push(c);
      walk(c);
    }
  };
  walk(pid);
  return out;
}

function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

function uidOf(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^Uid:\s+(\d+)/m.exec(status)![1]);
}

/** Alive and not a zombie. */
function isAlive(pid: number): boolean {
  if (!existsSync(`/proc/${pid}`)) return false;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}
