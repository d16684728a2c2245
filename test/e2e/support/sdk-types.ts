// Compiles events against the official client's types (@onkernel/sdk's .d.ts): every event must
// be assignable to BrowserTelemetryEvent; the types the client has no type for (cdp_command,
// computer_action) to the control event envelope (category, source, ts; docs/events.md
// "Control events"). Extension fields are allowed (no excess-property check: each event goes
// through a generic parameter), wrong values of the official fields are not.

import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

const ROOT = new URL('../../../', import.meta.url).pathname;

/** The event types the official client defines (read from its .d.ts); others are this agent's own. */
export function sdkEventTypes(): Set<string> {
  const text = readFileSync(join(ROOT, 'node_modules', '@onkernel', 'sdk', 'resources', 'browsers', 'telemetry.d.ts'), 'utf8');
  return new Set([...text.matchAll(/type: '([a-z_]+)'/g)].map((m) => m[1]!));
}

/** The compiler's messages; empty when every event validates. */
export function compileAgainstSdk(events: readonly object[]): string[] {
  const dir = join(ROOT, '.tmp', `sdk-check-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'events.ts');
  const lines = [
    "import type { BrowserAPICallEvent, BrowserTelemetryEvent } from '@onkernel/sdk/resources/browsers/telemetry';",
    "type ControlEnvelope = Omit<BrowserAPICallEvent, 'type' | 'data'> & { type: 'cdp_command' | 'computer_action'; data?: object };",
    'declare function official<T extends BrowserTelemetryEvent>(event: T): void;',
    'declare function control<T extends ControlEnvelope>(event: T): void;',
    ...events.map((event) => {
      const type = (event as { type: string }).type;
      return `${type === 'cdp_command' || type === 'computer_action' ? 'control' : 'official'}(${JSON.stringify(event)});`;
    }),
  ];
  writeFileSync(file, lines.join('\n'));
  try {
    const program = ts.createProgram([file], {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      types: [],
      typeRoots: [join(ROOT, 'node_modules', '@types')],
      baseUrl: ROOT,
    });
    return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
