import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { cpuSeconds, treeCpuSeconds, until } from '../../bench/lib/processes.ts';

// The bench's page loads bill Chromium's CPU by process tree: a renderer that has exited still
// counts, through the parent that reaped it.
describe('treeCpuSeconds', () => {
  const children: Array<ReturnType<typeof spawn>> = [];
  afterEach(() => {
    // The whole group: sh, and the node it left running (killing sh alone orphans it).
    for (const child of children) {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    children.length = 0;
  });

  it('counts live descendants and the CPU of children their parent has reaped', async () => {
    // sh runs a node that burns 300 ms of CPU and exits (sh reaps it), then a second one that
    // burns 300 ms and stays alive.
    const burn = (stay: boolean) =>
      `node -e "let x=0;const t=process.cpuUsage();while(process.cpuUsage(t).user<300000){for(let i=0;i<1e6;i++)x+=i}${stay ? ';console.log(1);setInterval(()=>{},1000)' : ''}"`;
    const root = spawn('sh', ['-c', `${burn(false)}; ${burn(true)}`], { stdio: ['ignore', 'pipe', 'ignore'], detached: true });
    children.push(root);
    let printed = false;
    root.stdout.on('data', () => (printed = true));
    await until(() => printed, 'the second child to finish burning', 20_000);

    expect(cpuSeconds(root.pid!)).toBeLessThan(0.1);
    const tree = treeCpuSeconds(root.pid!);
    expect(tree).toBeGreaterThanOrEqual(0.58);
    // Each burned about 0.3 s of user time and little else; nothing unrelated is counted.
    expect(tree).toBeLessThan(1.2);
  });
});
