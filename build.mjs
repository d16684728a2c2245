// Build: type-check, then bundle the agent with esbuild (dependencies stay external, so
// node_modules is resolved at run time) into dist/.
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { chmodSync } from 'node:fs';

const skipTypecheck = process.argv.includes('--no-typecheck');
if (!skipTypecheck) {
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '--noEmit', '-p', '.'], { stdio: 'inherit' });
}

await build({
  entryPoints: { main: 'src/main.ts', index: 'src/index.ts' },
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
