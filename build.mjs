// Build: bundle the injected page script into one minified IIFE and the viewer's assets, generate
// the modules that src/ imports them from, type-check, then bundle with esbuild (dependencies stay
// external, so node_modules is resolved at run time) both packages of the workspace: the agent
// (its program and its entries: the library, the HTTP kit, the event model, the program pieces,
// the replay kit)
// into dist/, the gateway into gateway/dist/ (docs/architecture.md "Two packages").
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

// The agent's entries share chunks (splitting), so a program importing several of them has one
// copy of each module (one ApiError class).
await build({
  entryPoints: {
    main: 'src/main.ts',
    index: 'src/index.ts',
    'http-kit': 'src/http/kit.ts',
    events: 'src/events.ts',
    program: 'src/program.ts',
    replay: 'src/replay/kit.ts',
  },
  outdir: 'dist',
  bundle: true,
  splitting: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  packages: 'external',
  sourcemap: true,
  logLevel: 'warning',
});
chmodSync('dist/main.js', 0o755);

// The gateway bundles the agent's pieces it imports from their sources, so gateway/dist/ needs
// only node_modules at run time, not the agent's dist/.
await build({
  entryPoints: { main: 'gateway/src/main.ts', index: 'gateway/src/index.ts' },
  outdir: 'gateway/dist',
  bundle: true,
  splitting: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  packages: 'external',
  plugins: [agentSourcePlugin()],
  sourcemap: true,
  logLevel: 'warning',
});
chmodSync('gateway/dist/main.js', 0o755);

/** Resolves `browser-telemetry-agent/<entry>` to the entry's source (package.json `exports`). */
function agentSourcePlugin() {
  const entries = JSON.parse(readFileSync('package.json', 'utf8')).exports;
  return {
    name: 'agent-source',
    setup(esbuild) {
      esbuild.onResolve({ filter: /^browser-telemetry-agent(\/|$)/ }, (args) => {
        const entry = entries[`.${args.path.slice('browser-telemetry-agent'.length)}`];
        if (entry?.source === undefined) return { errors: [{ text: `the agent package exports no ${args.path}` }] };
        return { path: new URL(entry.source, new URL(`file://${process.cwd()}/`)).pathname };
      });
    },
  };
}

/** Rewrite only on change, so watchers and incremental type-checks are not woken for nothing. */
function writeGenerated(path, text) {
  if (!existsSync(path) || readFileSync(path, 'utf8') !== text) writeFileSync(path, text);
}
