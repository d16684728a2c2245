// `node bench/viewer.mjs [--rate 1000] [--seconds 30] [--hide-console]`: bundles bench/sections/viewer.ts
// with the agent from the current sources (bench/lib/bundle.mjs: the page script and the viewer's
// assets built on the fly) into .tmp/bench-viewer.js and runs it (docs/viewer.md "Responsiveness").
import { bundle, root, runBundle } from './lib/bundle.mjs';

process.chdir(root);
await bundle({ entryPoints: { 'bench-viewer': 'bench/sections/viewer.ts' }, outdir: '.tmp' });
runBundle('.tmp/bench-viewer.js', process.argv.slice(2));
