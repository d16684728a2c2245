// `npm run bench [-- --quick]`: bundles the harness and the agent from the current sources with
// esbuild (bench/lib/bundle.mjs) into .tmp/bench-*.js, then runs the orchestrator. Bundling from
// src/ (not dist/) means the numbers always describe the code on disk.
import { bundle, root, runBundle } from './lib/bundle.mjs';

process.chdir(root);
// Names stay `.tmp/bench-<name>.js`, one level below the root (see bench/lib/bundle.mjs).
await bundle({
  entryPoints: {
    'bench-run': 'bench/run.ts',
    'bench-agent-host': 'bench/clients/agent-host.ts',
    'bench-bare-client': 'bench/clients/bare-client.ts',
    'bench-playwright-client': 'bench/clients/playwright-client.ts',
    'bench-subscribers': 'bench/clients/subscribers.ts',
    'bench-probe-floor': 'bench/clients/probe-floor.ts',
    'bench-agent-cli': 'src/main.ts',
    'bench-agent-cuts-cli': 'bench/clients/agent-cuts-cli.ts',
  },
  outdir: '.tmp',
});

// The orchestrator runs in its own process so it owns signals (Ctrl-C) and its children.
runBundle('.tmp/bench-run.js', process.argv.slice(2), ['--expose-gc']);
