// The promise of docs/architecture.md "Add an event type": a type added to the schema that nobody
// handles does not compile, and the compiler names every consumer that must decide what to do
// with it. A fixture adds two types to EventDataByType (module augmentation, as a change to
// injected/schema.ts would) and `tsc` checks the consumers with it.

import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');

/** Every module that must handle every event type, as the recipe lists them. */
const CONSUMERS = [
  'injected/schema.ts',
  'src/export/trace.ts',
  'src/export/har.ts',
  'src/export/otlp-record.ts',
  'viewer/model.ts',
  'gateway/src/archive/event-row.ts',
];

/** Where a type whose data carries no event context must be listed besides. */
const CONTEXT_READER = 'src/event-data.ts';

const fixture = () => `// Two event types nobody handles (test/unit/event-union.test.ts).
import type { EventContext } from '${relativeImport('injected/schema.ts')}';

declare module '${relativeImport('injected/schema.ts')}' {
  interface EventDataByType {
    fixture_page_thing: EventContext & { detail: string };
    fixture_agent_thing: { detail: string };
  }
}
`;

let dir: string;

function relativeImport(path: string): string {
  return relative(dir, join(root, path));
}

interface CompileError {
  file: string;
  message: string;
}

let errors: CompileError[];

beforeAll(async () => {
  dir = join(root, '.tmp', `event-union-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'new-types.ts'), fixture());
  const files = ['new-types.ts', ...CONSUMERS.map((path) => join(root, path)), join(root, CONTEXT_READER)];
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ extends: join(root, 'tsconfig.json'), include: [], files }));
  const tsc = join(root, 'node_modules/typescript/bin/tsc');
  const output = await promisify(execFile)(process.execPath, [tsc, '--noEmit', '--pretty', 'false', '-p', dir], { cwd: root }).then(
    () => '',
    // tsc exits 2 when it reports errors; what it reports is on stdout.
    (err: unknown) => (err as { stdout?: string }).stdout ?? '',
  );
  // `file(line,col): error TSnnnn: message` (the file relative to the working directory), then the
  // message's indented detail lines.
  errors = [...output.matchAll(/^(\S[^(]*)\(\d+,\d+\): error TS\d+: (.*(?:\n {2}.*)*)/gm)].map((m) => ({
    file: relative(root, resolve(root, m[1]!)),
    message: m[2]!,
  }));
}, 240_000);

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('a new event type nobody handles', () => {
  it('fails to compile at every consumer that must handle every type, and nowhere else', () => {
    expect([...new Set(errors.map((e) => e.file))].sort()).toEqual([...CONSUMERS, CONTEXT_READER].sort());
  });

  it("is named in each consumer's error", () => {
    for (const file of CONSUMERS) {
      const messages = errors.filter((e) => e.file === file).map((e) => e.message);
      expect({ file, page: messages.some((m) => m.includes('fixture_page_thing')) }).toEqual({ file, page: true });
      expect({ file, agent: messages.some((m) => m.includes('fixture_agent_thing')) }).toEqual({ file, agent: true });
    }
  });

  it('asks contextOf to list the type whose data carries no event context', () => {
    const messages = errors.filter((e) => e.file === CONTEXT_READER).map((e) => e.message);
    expect(messages).toEqual([expect.stringContaining("Type '{ detail: string; }' has no properties in common with type 'EventContext'")]);
  });

  it('is what the recipe in docs/architecture.md says the compiler demands', () => {
    const doc = readFileSync(join(root, 'docs/architecture.md'), 'utf8');
    const recipe = doc.slice(doc.indexOf('**Add an event type.**'), doc.indexOf('**Add a computer action.**'));
    for (const file of [...CONSUMERS, CONTEXT_READER]) expect({ file, named: recipe.includes(file) }).toEqual({ file, named: true });
  });
});
