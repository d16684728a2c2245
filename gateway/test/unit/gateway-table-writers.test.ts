// docs/architecture.md "Gateway tables": each table has its writers, and a write anywhere else is a
// second owner of the same rows. The gateway's SQL is static text in its sources, so reading the
// sources finds every write.

import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Which source files write `table` (INSERT, UPDATE, DELETE), the migrations aside. */
function writersOf(table: string): string[] {
  const write = new RegExp(`\\b(?:INSERT\\s+INTO|UPDATE|DELETE\\s+FROM)\\s+${table}\\b`, 'i');
  return sources(join(root, 'src'))
    .map((path) => relative(root, path))
    .filter((path) => path !== join('src', 'storage', 'migrations.ts'))
    .filter((path) => write.test(readFileSync(join(root, path), 'utf8')))
    .sort();
}

describe('gateway table writers', () => {
  it('browsers: only storage/browser-rows.ts', () => {
    expect(writersOf('browsers')).toEqual(['src/storage/browser-rows.ts']);
  });

  it('archive_follow: the leases, and browser-rows.ts removing a lease with its row', () => {
    expect(writersOf('archive_follow')).toEqual(['src/archive/archive-leases.ts', 'src/storage/browser-rows.ts']);
  });

  it('archive_events: the archive inserts and retention', () => {
    expect(writersOf('archive_events')).toEqual(['src/archive/archive-inserts.ts', 'src/archive/archive-retention-queries.ts']);
  });

  it('finds a write (the check itself)', () => {
    expect(writersOf('projects')).toEqual(['src/storage/store.ts']);
  });
});
