// `node bench/har.mjs [--requests=10000]`: the HAR export section on its own (bench/sections/har.ts),
// bundled from the current sources (bench/lib/bundle.mjs), then run with --expose-gc.
import { join } from 'node:path';
import { bundle, root, runBundle } from './lib/bundle.mjs';

const requests = Number(/^--requests=(\d+)$/.exec(process.argv[2] ?? '')?.[1] ?? 10_000);

await bundle({
  stdin: {
    contents: `import { runHar } from './sections/har.ts';\nconst r = await runHar({ requests: ${requests} });\nif (r.httpMs > 1000) { process.stdout.write('over the 1 s budget\\n'); process.exitCode = 1; }`,
    resolveDir: join(root, 'bench'),
    loader: 'ts',
  },
  outfile: join(root, '.tmp/bench-har.js'),
});
runBundle('.tmp/bench-har.js', [], ['--expose-gc']);
