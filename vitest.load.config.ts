import { defineConfig } from 'vitest/config';
import base from './vitest.config.ts';

// The load tests of test/load/ (docs/operations.md "Catch-up readers under load"): `npm test` runs
// them after the rest of the suite, one at a time, so that they measure the agent under their own
// load and not under the other tests'. `npm run test:load` runs them alone.
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: ['test/load/**/*.test.ts'],
    exclude: ['**/node_modules/**'],
    maxWorkers: 1,
    outputFile: { json: '.tmp/vitest-load-report.json' },
  },
});
