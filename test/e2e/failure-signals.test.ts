// Failure signals on real Chromium (docs/events.md "Failure signals"): a tab whose renderer
// crashes and is reloaded, a tab hung by an infinite loop for 8 s, a long task with its script,
// the embedded browser killed with SIGKILL, a browser whose relaunches exit during start-up until
// the agent gives up, a viewer opened and closed in a real page, and a
// process OOM-killed in a memory-limited cgroup.

import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { locateChromium } from '../../src/browser/chromium-launcher.ts';
import { ATTEMPTS_BEFORE_EXHAUSTED } from '../../src/browser/reconnector.ts';
import { startRig, TOKEN, until, type Tab, type TestRig } from './support/harness.ts';

describe('failure signals', () => {
  let rig: TestRig;

  beforeAll(async () => {
    rig = await startRig();
  });
  afterAll(async () => {
    await rig?.close();
  });

  async function loadedTab(path: string, body: string): Promise<{ tab: Tab; url: string }> {
    const url = rig.server.route(path, body);
    const tab = await rig.driver.newTab();
    await tab.ready(rig.stream);
    await tab.navigate(url);
    await rig.stream.waitForEvent('page_load', (e) => e.data?.url === url && e.data.target_id === tab.targetId);
    return { tab, url };
  }

  it('reports a renderer crash with its status and the tab recovering on reload', async () => {
    const { tab, url } = await loadedTab('/crash.html', '<title>crash</title><p>about to crash</p>');
    void tab.send('Page.crash').catch(() => undefined);
    const crashed = await rig.stream.waitForEvent('page_crashed', (e) => e.data?.target_id === tab.targetId);
    expect(crashed.category).toBe('page');
    expect(crashed.source).toMatchObject({ kind: 'cdp', event: 'Target.targetCrashed' });
    expect(crashed.data).toMatchObject({ url, target_type: 'page', status: expect.stringMatching(/^(crashed|killed|abnormal)$/) });
    await tab.send('Page.reload');
    const recovered = await rig.stream.waitForEvent('page_recovered', (e) => e.data?.target_id === tab.targetId);
    expect(recovered.data!.down_ms).toBeGreaterThanOrEqual(0);
    expect(recovered.ts).toBeGreaterThan(crashed.ts);
    await tab.close();
  });

  it('reports a tab hung for 8 s as unresponsive after 5 s, then responsive', async () => {
    const { tab } = await loadedTab('/hang.html', '<title>hang</title><p>hang</p>');
    const started = Date.now();
    await tab.evaluate('setTimeout(() => { const end = Date.now() + 8000; while (Date.now() < end) {} }, 0); 1');
    const unresponsive = await rig.stream.waitForEvent('page_unresponsive', (e) => e.data?.target_id === tab.targetId, 20_000);
    expect(unresponsive.data).toMatchObject({ threshold_ms: 5000, target_type: 'page' });
    const responsive = await rig.stream.waitForEvent('page_responsive', (e) => e.data?.target_id === tab.targetId, 20_000);
    // The probe that went unanswered was sent within the first 5 s of the loop.
    expect(responsive.data!.unresponsive_ms).toBeGreaterThanOrEqual(5000);
    expect(responsive.data!.unresponsive_ms).toBeLessThanOrEqual(8500);
    expect(Date.now() - started).toBeGreaterThanOrEqual(8000);
    expect(rig.stream.ofType('page_unresponsive').filter((e) => e.data?.target_id === tab.targetId)).toHaveLength(1);
    await tab.close();
  }, 40_000);

  it('reports a 300 ms task as page_long_task with the function that ran it', async () => {
    const script = rig.server.route(
      '/busy.js',
      'function busyFor300() { const end = performance.now() + 300; while (performance.now() < end) {} }',
      'text/javascript',
    );
    const { tab } = await loadedTab('/long-task.html', `<title>long</title><script src="${script}"></script><p>x</p>`);
    // Under 200 ms: not reported.
    await tab.evaluate('setTimeout(() => { const end = performance.now() + 100; while (performance.now() < end) {} }, 0); 1');
    await tab.evaluate('setTimeout(busyFor300, 50); 1');
    const long = await rig.stream.waitForEvent('page_long_task', (e) => e.data?.target_id === tab.targetId);
    expect(long.data!.duration).toBeGreaterThanOrEqual(300);
    expect(long.data!.attribution[0]).toMatchObject({ name: expect.any(String) });
    expect(long.data!.scripts?.[0]).toMatchObject({ source_url: script, source_function_name: 'busyFor300', invoker_type: 'user-callback' });
    expect(rig.stream.ofType('page_long_task').filter((e) => e.data?.target_id === tab.targetId)).toHaveLength(1);
    await tab.close();
  });

  it('reports a viewer opening and leaving the live viewer', async () => {
    const minted = await fetch(`${rig.agent.url}/browsers/${rig.agent.sessionId}/viewer/sessions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const { url } = (await minted.json()) as { url: string };
    const tab = await rig.driver.newTab();
    await tab.navigate(url);
    const connect = await rig.stream.waitForEvent('live_view_connect');
    expect(connect.category).toBe('connection');
    expect(connect.data!.session_id).toMatch(/^[A-Za-z0-9_-]{16}$/);
    await tab.close();
    const disconnect = await rig.stream.waitForEvent('live_view_disconnect', (e) => e.data?.session_id === connect.data!.session_id);
    expect(disconnect.data!.duration_ms).toBeGreaterThan(0);
    // A bearer-token stream is no viewer.
    expect(rig.stream.ofType('live_view_connect')).toHaveLength(1);
  });

  it('reports a process OOM-killed in a memory-limited cgroup', async () => {
    const cgroup = memoryCgroup();
    expect(cgroup, 'no writable memory cgroup on this machine').toBeDefined();
    const dir = join(cgroup!.root, `bta-oom-${process.pid}`);
    mkdirSync(dir);
    try {
      writeFileSync(join(dir, cgroup!.limitFile), String(64 * 1024 * 1024));
      if (cgroup!.version === 2) writeFileSync(join(dir, 'memory.swap.max'), '0');
      const child = spawn('sh', ['-c', `echo $$ > ${join(dir, 'cgroup.procs')} && exec node -e "const a=[];for(;;)a.push(Buffer.alloc(1<<20,1))"`], {
        stdio: 'ignore',
      });
      const exit = await new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
      const exitedAtUs = Date.now() * 1000;
      expect(exit).toBe('SIGKILL');
      const kill = await rig.stream.waitForEvent('system_oom_kill', (e) => e.data?.pid === child.pid);
      expect(kill.category).toBe('system');
      // Stamped when the kernel logged it (the poll runs every 5 s), just before the exit was seen.
      expect(kill.ts).toBeLessThanOrEqual(exitedAtUs + 50_000);
      expect(kill.ts).toBeGreaterThan(exitedAtUs - 2_000_000);
      expect(kill.data).toMatchObject({ process_name: 'node', constraint: 'memcg', trigger_process_name: 'node' });
      expect(kill.data!.rss_kb).toBeGreaterThan(32 * 1024);
      expect(kill.data!.oom_memcg).toContain(`bta-oom-${process.pid}`);
    } finally {
      await until(() => readFileSync(join(dir, 'cgroup.procs'), 'utf8').trim() === '', 'the cgroup to empty');
      rmdirSync(dir);
    }
    expect(existsSync(dir)).toBe(false);
  }, 30_000);

  // Last: the browser is relaunched afterwards.
  it('reports the embedded browser killed with SIGKILL as service_crashed', async () => {
    const pid = rig.agent.browserPid!;
    process.kill(pid, 'SIGKILL');
    const crashed = await rig.stream.waitForEvent('service_crashed', (e) => e.data?.pid === pid);
    expect(crashed.category).toBe('system');
    expect(crashed.data).toEqual({ service_name: 'chromium', phase: 'running', pid, signal: 'SIGKILL' });
    await rig.stream.waitForEvent('monitor_reconnected');
    expect(rig.stream.ofType('service_crashed')).toHaveLength(1);
  }, 30_000);
});

describe('an embedded browser that cannot be relaunched', () => {
  let rig: TestRig;
  let dir: string;

  beforeAll(async () => {
    // A Chromium path that starts the real browser once, then exits at once with code 3.
    dir = mkdtempSync(join(tmpdir(), 'bta-relaunch-'));
    const real = await locateChromium();
    const wrapper = join(dir, 'chromium');
    const env = Object.entries(real.env ?? {})
      .map(([name, value]) => `export ${name}=${JSON.stringify(value)}\n`)
      .join('');
    writeFileSync(
      wrapper,
      `#!/bin/sh\n${env}if [ -e ${JSON.stringify(join(dir, 'started'))} ]; then exit 3; fi\n: > ${JSON.stringify(join(dir, 'started'))}\nexec ${JSON.stringify(real.path)} "$@"\n`,
    );
    chmodSync(wrapper, 0o755);
    rig = await startRig({ chromePath: wrapper, timing: { backoffInitialMs: 10, backoffMaxMs: 40 } });
  });
  afterAll(async () => {
    await rig?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('reports each relaunch that exits during start-up, then gave_up after the attempts run out', async () => {
    const pid = rig.agent.browserPid!;
    process.kill(pid, 'SIGKILL');
    await rig.stream.waitForEvent('service_crashed', (e) => e.data?.phase === 'running' && e.data.pid === pid);
    const gaveUp = await rig.stream.waitForEvent('service_crashed', (e) => e.data?.phase === 'gave_up', 30_000);
    expect(gaveUp.category).toBe('system');
    expect(gaveUp.data).toEqual({ service_name: 'chromium', phase: 'gave_up', attempts: ATTEMPTS_BEFORE_EXHAUSTED });
    const crashes = rig.stream.ofType('service_crashed');
    const startups = crashes.slice(0, crashes.indexOf(gaveUp)).filter((e) => e.data!.phase === 'startup');
    // Every failed attempt was a relaunch that exited during start-up.
    expect(startups).toHaveLength(ATTEMPTS_BEFORE_EXHAUSTED);
    for (const startup of startups) {
      expect(startup.data).toEqual({ service_name: 'chromium', phase: 'startup', pid: expect.any(Number), exit_code: 3 });
      expect(startup.data!.pid).not.toBe(pid);
    }
    // Attempts go on at the capped backoff after giving up; gave_up is reported once per loss.
    await until(
      () => rig.stream.ofType('service_crashed').filter((e) => e.data!.phase === 'startup').length > ATTEMPTS_BEFORE_EXHAUSTED + 2,
      'attempts after giving up',
    );
    expect(rig.stream.ofType('service_crashed').filter((e) => e.data!.phase === 'gave_up')).toHaveLength(1);
    expect(rig.stream.ofType('monitor_reconnect_failed')).toHaveLength(1);
  }, 60_000);
});

/** This process's memory cgroup, where a child cgroup may be made: cgroup v2 when it has the memory controller, else v1. */
function memoryCgroup(): { root: string; limitFile: string; version: 1 | 2 } | undefined {
  const lines = readFileSync('/proc/self/cgroup', 'utf8').trim().split('\n');
  const v1 = lines.map((line) => line.split(':')).find(([, controllers]) => controllers!.split(',').includes('memory'));
  for (const mount of ['/sys/fs/cgroup', '/sys/fs/cgroup/unified']) {
    const v2 = lines.find((line) => line.startsWith('0::'));
    if (v2 === undefined || !existsSync(join(mount, 'cgroup.controllers'))) continue;
    const root = join(mount, v2.slice(3));
    if (readFileSync(join(mount, 'cgroup.controllers'), 'utf8').split(/\s+/).includes('memory')) return { root, limitFile: 'memory.max', version: 2 };
  }
  if (v1 !== undefined && existsSync('/sys/fs/cgroup/memory'))
    return { root: join('/sys/fs/cgroup/memory', v1[2]!), limitFile: 'memory.limit_in_bytes', version: 1 };
  return undefined;
}
