// How the bench's entry scripts (run.mjs, har.mjs, viewer.mjs) build and start their programs:
// esbuild from the current sources (dependencies external, as in build.mjs), the generated modules
// (page script, viewer assets) built on the fly so a stale or missing src/generated/ does not
// matter, and a child process that receives the signals sent to the entry script.
import { build } from 'esbuild';
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundlePageScript, pageScriptModule } from '../../page-script-bundle.mjs';
import { bundleViewer, viewerAssetsModule } from '../../viewer/bundle.mjs';

export const root = join(dirname(fileURLToPath(import.meta.url)), '../..');

/** Resolves a generated module (`../generated/<name>.ts`) to one built now. */
function generated(name, make) {
  return {
    name: `bench-${name}`,
    setup(b) {
      b.onResolve({ filter: new RegExp(`generated/${name}\\.ts$`) }, (args) => ({ path: args.path, namespace: `bench-${name}` }));
      b.onLoad({ filter: /.*/, namespace: `bench-${name}` }, async () => ({ contents: await make(), loader: 'ts' }));
    },
  };
}

/**
 * Bundles `input` (esbuild's entryPoints with outdir, or stdin with outfile) under the repository
 * root. Output names are `.tmp/bench-<name>.js`: one level below the root, so the agent CLI's
 * `new URL('../package.json', import.meta.url)` finds package.json as dist/main.js does.
 */
export async function bundle(input) {
  await build({
    absWorkingDir: root,
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
    ...input,
  });
}

/** Runs a bundle in its own process, forwarding signals; exits with its status. */
export function runBundle(file, args, nodeFlags = []) {
  const child = spawn(process.execPath, [...nodeFlags, join(root, file), ...args], { stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}
