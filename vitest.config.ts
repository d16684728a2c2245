import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// The agent package's entries (`browser-telemetry-agent/...`, as the gateway package imports them)
// resolve to their TypeScript sources (package.json `exports`, condition `source`), as tsconfig.json
// and build.mjs resolve them: one copy of each module, no build between an edit and a test.
const entries = (JSON.parse(readFileSync(new URL('package.json', import.meta.url), 'utf8')) as { exports: Record<string, { source?: string }> }).exports;
const alias = Object.entries(entries).flatMap(([subpath, entry]) =>
  entry.source === undefined
    ? []
    : [{ find: new RegExp(`^browser-telemetry-agent${subpath.slice(1)}$`), replacement: fileURLToPath(new URL(entry.source, import.meta.url)) }],
);

export default defineConfig({
  resolve: { alias },
  test: {
    // One command tests both packages of the workspace: the agent's test/ and the gateway's.
    include: ['test/**/*.test.ts', 'gateway/test/**/*.test.ts'],
    // test/load/: the acceptance loads, run alone after the rest by `npm test`
    // (vitest.load.config.ts; docs/operations.md "Catch-up readers under load").
    exclude: ['test/load/**', '**/node_modules/**'],
    // e2e files each drive a real Chromium; the machine has 2 cores.
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 30_000,
    reporters: ['default', 'json'],
    outputFile: { json: '.tmp/vitest-report.json' },
  },
});
