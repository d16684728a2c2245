import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { computerDoc } from '../../scripts/docs/computer.ts';
import { configurationDoc } from '../../scripts/docs/configuration.ts';

const REGENERATE = 'stale: regenerate it with `node scripts/generate-docs.mjs`';

function onDisk(file: string): string {
  return readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');
}

describe('generated docs', () => {
  it('docs/configuration.md matches the settings tables', () => {
    expect(onDisk('docs/configuration.md'), `docs/configuration.md is ${REGENERATE}`).toBe(configurationDoc());
  });

  it('docs/computer.md matches the batch schema', () => {
    expect(onDisk('docs/computer.md'), `docs/computer.md is ${REGENERATE}`).toBe(computerDoc());
  });
});
