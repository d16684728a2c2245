// Build: bundle the injected page script into one minified IIFE and generate the module that
// src/ imports it from, type-check, then bundle the agent with esbuild (dependencies stay
// external, so node_modules is resolved at run time) into dist/.
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { bundlePageScript, pageScriptModule } from './page-script-bundle.mjs';

const skipTypecheck = process.argv.includes('--no-typecheck');

// The page script first: tsc and the agent bundle import the generated module.
const generated = pageScriptModule(await bundlePageScript());
const generatedPath = 'src/generated/page-script.ts';
mkdirSync('src/generated', { recursive: true });
// Rewrite only on change, so watchers and incremental type-checks are not woken for nothing.
if (!existsSync(generatedPath) || readFileSync(generatedPath, 'utf8') !== generated) writeFileSync(generatedPath, generated);
if (!skipTypecheck) {
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '--noEmit', '-p', '.'], { stdio: 'inherit' });
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
