// Build: bundle the injected page script into one minified IIFE and the viewer's assets, generate
// the modules that src/ imports them from, type-check, then bundle the agent with esbuild
// (dependencies stay external, so node_modules is resolved at run time) into dist/.
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { bundlePageScript, pageScriptModule } from './page-script-bundle.mjs';
import { bundleViewer, viewerAssetsModule } from './viewer/bundle.mjs';

const skipTypecheck = process.argv.includes('--no-typecheck');

// The page script and the viewer's assets first (docs/viewer.md): tsc and the agent bundle import
// the generated modules.
mkdirSync('src/generated', { recursive: true });
writeGenerated('src/generated/page-script.ts', pageScriptModule(await bundlePageScript()));
writeGenerated('src/generated/viewer-assets.ts', viewerAssetsModule(await bundleViewer()));
if (!skipTypecheck) {
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '--noEmit', '-p', '.'], { stdio: 'inherit' });
  // The viewer runs in a browser: its own project (DOM types, no Node ones).
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '--noEmit', '-p', 'viewer'], { stdio: 'inherit' });
}

await build({
  entryPoints: { main: 'src/main.ts', index: 'src/index.ts', gateway: 'src/gateway/main.ts' },
  outdir: 'dist',
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  packages: 'external',
  sourcemap: true,
  logLevel: 'warning',
});
chmodSync('dist/main.js', 0o755);
chmodSync('dist/gateway.js', 0o755);

/** Rewrite only on change, so watchers and incremental type-checks are not woken for nothing. */
function writeGenerated(path, text) {
  if (!existsSync(path) || readFileSync(path, 'utf8') !== text) writeFileSync(path, text);
}
