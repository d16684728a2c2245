// `node bench/har.mjs [--requests=10000]`: the HAR export section on its own (bench/sections/har.ts),
// bundled from the current sources with esbuild as bench/run.mjs does, then run with --expose-gc.
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const requests = Number(/^--requests=(\d+)$/.exec(process.argv[2] ?? '')?.[1] ?? 10_000);

await build({
  stdin: {
    contents: `import { runHar } from './sections/har.ts';\nconst r = await runHar({ requests: ${requests} });\nif (r.httpMs > 1000) { process.stdout.write('over the 1 s budget\\n'); process.exitCode = 1; }`,
    resolveDir: join(root, 'bench'),
    loader: 'ts',
  },
  outfile: join(root, '.tmp/bench-har.js'),
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  packages: 'external',
  logLevel: 'warning',
});
const run = spawnSync(process.execPath, ['--expose-gc', join(root, '.tmp/bench-har.js')], { stdio: 'inherit' });
process.exit(run.status ?? 1);
