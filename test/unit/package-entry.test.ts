// The agent package's library entry (src/index.ts, `browser-telemetry-agent`) knows neither the
// gateway nor PostgreSQL: bundled as build.mjs bundles it, its module graph has no file of the
// gateway package and imports no `pg` (docs/architecture.md "Two packages").

import { build, type Metafile } from 'esbuild';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');

describe('the agent package entry', () => {
  let metafile: Metafile;
  beforeAll(async () => {
    ({ metafile } = await build({
      entryPoints: [join(ROOT, 'src/index.ts')],
      absWorkingDir: ROOT,
      bundle: true,
      platform: 'node',
      format: 'esm',
      packages: 'external',
      write: false,
      metafile: true,
      logLevel: 'silent',
    }));
  }, 60_000);

  it('loads no module of the gateway package', () => {
    const inputs = Object.keys(metafile.inputs);
    expect(inputs).toContain('src/agent.ts');
    expect(inputs.filter((path) => path.startsWith('gateway/') || path.includes('/gateway/'))).toEqual([]);
  });

  it('imports neither pg nor the gateway package', () => {
    const external = Object.values(metafile.inputs).flatMap((input) => input.imports.filter((i) => i.external).map((i) => i.path));
    expect(external).toContain('fastify');
    expect(external.filter((path) => /^(pg|pg-[a-z-]+|browser-telemetry-gateway)(\/|$)/.test(path))).toEqual([]);
  });

  it('does not depend on pg; the gateway package does', () => {
    const agent = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    const gateway = JSON.parse(readFileSync(join(ROOT, 'gateway/package.json'), 'utf8')) as { dependencies: Record<string, string> };
    expect([Object.keys(agent.dependencies).includes('pg'), Object.keys(gateway.dependencies).includes('pg')]).toEqual([false, true]);
  });
});
