// Every way to change the agent's behaviour is in the settings table and `--help`
// (docs/architecture.md "Add a config flag"): the product's code reads the environment only
// through the settings tables (which look variables up by the names their rows give), plus the
// platform's own variables it must honour to find things. Experiment switches live in the bench
// (src/telemetry/cdp-cuts.ts), never in an environment variable the product reads.

import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');

/** The product's sources: the agent, its page script and viewer, the gateway (not generated code, not build scripts). */
const PRODUCT_DIRS = ['src', 'injected', 'viewer', 'gateway/src'];

/** Variables of the platform read by name: where Chromium, the state and the cache are found. */
const PLATFORM_VARIABLES = new Set(['PATH', 'HOME', 'XDG_STATE_HOME', 'XDG_CACHE_HOME', 'LD_LIBRARY_PATH', 'FONTCONFIG_PATH']);

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'generated' ? [] : sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

const files = PRODUCT_DIRS.flatMap((dir) => sources(join(root, dir))).map((path) => ({ path: relative(root, path), text: readFileSync(path, 'utf8') }));

/** `[file, match]` for every match of `pattern` in the product's sources. */
function matches(pattern: RegExp): Array<[string, string]> {
  return files.flatMap(({ path, text }) => [...text.matchAll(pattern)].map((m): [string, string] => [path, m[1] ?? m[0]]));
}

describe('environment reads in the product', () => {
  it('scans the sources of the agent and the gateway', () => {
    expect(files.map((f) => f.path)).toEqual(expect.arrayContaining(['src/agent.ts', 'src/telemetry/telemetry.ts', 'gateway/src/gateway.ts']));
  });

  it('names no BTA_ variable (the prefix of the bench switches that moved to the bench)', () => {
    expect(matches(/\bBTA_[A-Z_]*/g)).toEqual([]);
  });

  it('reads variables by name only for the platform’s own (PATH, HOME, XDG_*, library and font paths)', () => {
    const named = matches(/\benv\??\.([A-Z_][A-Z0-9_]*)\b/g).filter(([, name]) => !PLATFORM_VARIABLES.has(name));
    expect(named).toEqual([]);
  });

  it('never indexes process.env with a computed name (the settings tables look variables up in the env they are given)', () => {
    expect(matches(/process\.env\s*\[/g)).toEqual([]);
  });
});
