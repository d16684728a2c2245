// `node bench/viewer.mjs [--rate 1000] [--seconds 30] [--hide-console]`: bundles bench/sections/viewer.ts
// with the agent from the current sources (as bench/run.mjs does, the page script and the viewer's
// assets built on the fly) into .tmp/bench-viewer.js and runs it (docs/viewer.md "Responsiveness").
import { build } from 'esbuild';
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundlePageScript, pageScriptModule } from '../page-script-bundle.mjs';
import { bundleViewer, viewerAssetsModule } from '../viewer/bundle.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
process.chdir(root);

/** Resolves a generated module (`../generated/<name>.ts`) to one built now. */
const generated = (name, make) => ({
  name: `bench-viewer-${name}`,
  setup(b) {
    b.onResolve({ filter: new RegExp(`generated/${name}\\.ts$`) }, (args) => ({ path: args.path, namespace: `bench-${name}` }));
    b.onLoad({ filter: /.*/, namespace: `bench-${name}` }, async () => ({ contents: await make(), loader: 'ts' }));
  },
});

await build({
  entryPoints: { 'bench-viewer': 'bench/sections/viewer.ts' },
  outdir: '.tmp',
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  packages: 'external',
  sourcemap: 'linked',
  logLevel: 'warning',
  plugins: [
    generated('page-script', async () => pageScriptModule(await bundlePageScript())),
    generated('viewer-assets', async () => viewerAssetsModule(await bundleViewer())),
  ],
});

const child = spawn(process.execPath, [join(root, '.tmp/bench-viewer.js'), ...process.argv.slice(2)], { stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
