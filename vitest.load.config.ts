import { defineConfig, mergeConfig } from 'vitest/config';
import base from './vitest.config.ts';

// `npm run test:load`: the load tests of test/load/ (docs/operations.md "Catch-up readers under load"),
// one at a time on an otherwise idle machine.
export default mergeConfig(base, defineConfig({ test: { include: ['test/load/**/*.test.ts'], exclude: [], maxWorkers: 1 } }));
