// `npm run bench [-- --quick]`: bundles the harness and the agent from the current sources with
// esbuild (dependencies stay external, as in build.mjs) into .tmp/bench-*.js, then runs the
// orchestrator. Bundling from src/ (not dist/) means the numbers always describe the code on disk.
// The page script is bundled from injected/ with build.mjs's own code (page-script-bundle.mjs), and
// the viewer's assets with viewer/bundle.mjs, so a stale or missing src/generated/ does not matter.
import { build } from 'esbuild';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { bundlePageScript, pageScriptModule } from '../page-script-bundle.mjs';
import { bundleViewer, viewerAssetsModule } from '../viewer/bundle.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
process.chdir(root);

/** Resolves `../generated/page-script.ts` to a module built from injected/page-script.ts. */
const pageScriptPlugin = {
  name: 'bench-page-script',
  setup(b) {
    b.onResolve({ filter: /generated\/page-script\.ts$/ }, (args) => ({ path: args.path, namespace: 'bench-page-script' }));
    b.onLoad({ filter: /.*/, namespace: 'bench-page-script' }, async () => ({ contents: pageScriptModule(await bundlePageScript()), loader: 'ts' }));
  },
};

/** The same for the viewer's assets (docs/viewer.md), which src/http/viewer-routes.ts serves. */
const viewerAssetsPlugin = {
  name: 'bench-viewer-assets',
  setup(b) {
    b.onResolve({ filter: /generated\/viewer-assets\.ts$/ }, (args) => ({ path: args.path, namespace: 'bench-viewer-assets' }));
    b.onLoad({ filter: /.*/, namespace: 'bench-viewer-assets' }, async () => ({ contents: viewerAssetsModule(await bundleViewer()), loader: 'ts' }));
  },
};

// Output names are `.tmp/bench-<name>.js`: one level below the repository root, so the agent
// CLI's `new URL('../package.json', import.meta.url)` finds package.json as dist/main.js does.
await build({
  entryPoints: {
    'bench-run': 'bench/run.ts',
    'bench-agent-host': 'bench/clients/agent-host.ts',
    'bench-bare-client': 'bench/clients/bare-client.ts',
    'bench-subscribers': 'bench/clients/subscribers.ts',
    'bench-agent-cli': 'src/main.ts',
  },
  outdir: '.tmp',
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  packages: 'external',
  sourcemap: 'linked',
  logLevel: 'warning',
  plugins: [pageScriptPlugin, viewerAssetsPlugin],
});

// The orchestrator runs in its own process so it owns signals (Ctrl-C) and its children.
const child = spawn(process.execPath, ['--expose-gc', join(root, '.tmp/bench-run.js'), ...process.argv.slice(2)], { stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
