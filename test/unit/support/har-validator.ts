// The HAR 1.2 JSON schema (har-schema) compiled with ajv: a validator for documents the agent
// exports (docs/export.md "HAR"). har-schema is draft-06 and uses a few keywords of its own
// (`min`, `optional`, `unique`), hence the draft-06 meta-schema and non-strict mode.

import { createRequire } from 'node:module';
import { Ajv, type ValidateFunction } from 'ajv';

const require = createRequire(import.meta.url);

export function harValidator(): ValidateFunction {
  const schemas = require('har-schema') as Record<string, object>;
  const addFormats = require('ajv-formats') as typeof import('ajv-formats').default;
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addMetaSchema(require('ajv/lib/refs/json-schema-draft-06.json') as object);
  for (const [name, schema] of Object.entries(schemas)) if (name !== 'har') ajv.addSchema(schema);
  return ajv.compile(schemas.har!);
}
