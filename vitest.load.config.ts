import { defineConfig } from 'vitest/config';
import base from './vitest.config.ts';

// `npm run test:load`: the load tests of test/load/ (docs/operations.md "Catch-up readers under load"),
// one at a time on an otherwise idle machine.
export default defineConfig({ ...base, test: { ...base.test, include: ['test/load/**/*.test.ts'], exclude: ['**/node_modules/**'], maxWorkers: 1 } });
