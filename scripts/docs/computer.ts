// docs/computer.md from the batch schema (src/computer/batch-schema.ts): every action's fields,
// defaults and ranges, and the batch limits, so that no document copies them by hand.
// test/unit/generated-docs.test.ts fails when the file is stale.

import { ACTION_KINDS, BATCH_LIMITS, batchBodySchema } from '../../src/computer/batch-schema.ts';
import { generatedNotice, table } from './markdown.ts';

interface FieldSchema {
  type?: string;
  enum?: readonly unknown[];
  default?: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  items?: FieldSchema;
  description?: string;
}

interface PayloadSchema {
  properties: Record<string, FieldSchema>;
  required: readonly string[];
}

const code = (value: unknown) => `\`${typeof value === 'string' ? value : JSON.stringify(value)}\``;

function range(min: number | undefined, max: number | undefined, unit: string): string {
  if (min === undefined && max === undefined) return '';
  if (min === undefined) return `at most ${max}${unit}`;
  if (max === undefined) return `at least ${min}${unit}`;
  return `${min} to ${max}${unit}`;
}

function describeField(field: FieldSchema): string {
  const parts: string[] = [];
  if (field.enum) parts.push(field.enum.map(code).join(', '));
  else if (field.type === 'array') {
    const items = field.items?.type === 'array' ? `[x, y] points` : `${field.items?.type ?? ''}s`;
    parts.push(`${range(field.minItems, field.maxItems, '')} ${items}`.trim());
  } else if (field.type === 'string') parts.push(`string, ${range(field.minLength, field.maxLength, ' characters')}`);
  else {
    const bounds = range(field.minimum, field.maximum, '');
    parts.push(bounds ? `${field.type}, ${bounds}` : `${field.type}`);
  }
  if (field.default !== undefined) parts.push(`default ${code(field.default)}`);
  return parts.join('; ');
}

function actionTable(): string {
  const actionProperties = batchBodySchema.properties.actions.items.properties as unknown as Record<string, PayloadSchema>;
  const rows: string[][] = [];
  for (const kind of ACTION_KINDS) {
    const payload = actionProperties[kind]!;
    for (const [name, field] of Object.entries(payload.properties)) {
      const required = payload.required.includes(name);
      rows.push([code(kind), required ? `**${name}**` : name, describeField(field), field.description ?? '']);
    }
  }
  return table(['Action', 'Field (required in bold)', 'Values', 'Notes'], rows);
}

function limitsTable(): string {
  return table(
    ['Limit', 'Value'],
    Object.entries(BATCH_LIMITS).map(([name, value]) => [code(name), String(value)]),
  );
}

export function computerDoc(): string {
  return [
    generatedNotice('src/computer/batch-schema.ts'),
    '',
    '# Computer batch actions',
    '',
    '`POST /browsers/{id}/computer/batch` takes `{"actions": [{"type": "<kind>", "<kind>": {...}}, ...]}`,',
    `${batchBodySchema.properties.actions.minItems} to ${batchBodySchema.properties.actions.maxItems} actions; the payload object named by \`type\` is required and no other one is`,
    'allowed. Coordinates are integer CSS pixels of the active tab\'s viewport. [computer-batch.md](computer-batch.md)',
    'describes validation and execution; the OpenAPI document',
    '(`GET /openapi.json`) carries the same schema.',
    '',
    '## Actions',
    '',
    actionTable(),
    '',
    '## Limits',
    '',
    `The waiting a batch asks for (sleeps, typing delays, key holds, drag delays and steps, smooth`,
    `durations) may total at most \`maxTotalWaitMs\`, checked before anything runs.`,
    '',
    limitsTable(),
    '',
  ].join('\n');
}
