// The rules of query parameters (docs/decisions.md "Query parameters", docs/events.md "Query
// parameters"), one for every route of the agent and the gateway (through the shared HTTP kit):
// which names a route takes and how often, and integers as decimal digits.

import { invalidInput } from './errors.ts';

const DECIMAL_DIGITS = /^[0-9]+$/;

/**
 * Integer query parameters are decimal digits only (docs/events.md "Query parameters"): the
 * schema's coercion would also take `1e3`, `0x10` or ` 1`, and turn `1e400` into Infinity. Runs on
 * the raw values, before the schema bounds them.
 */
export function requireDecimalIntegers(query: Record<string, unknown>, names: readonly string[]): void {
  for (const name of names) {
    const value = query[name];
    if (value === undefined || (typeof value === 'string' && DECIMAL_DIGITS.test(value))) continue;
    throw invalidInput(`${name}: expected a non-negative decimal integer (digits only)`, [
      { code: 'invalid_input', message: 'expected a non-negative decimal integer (digits only)', field: name },
    ]);
  }
}

/** A route schema's declared query parameters: a list parameter has type array. */
interface QuerySchema {
  properties?: Record<string, { type?: unknown }>;
}

/**
 * The one rule for every route that declares query parameters (in its querystring schema): a name
 * it does not declare is 400 (a misspelt filter would otherwise be a silently unfiltered answer),
 * and so is a single-valued parameter given more than once (which value was meant?); a list
 * parameter may be repeated, the same as comma-separated. Runs on the parsed query, before the
 * schema, so each gets the error that names it. Routes without a querystring schema take none and
 * are not checked.
 */
export function checkQueryParameters(query: unknown, schema: unknown): void {
  const properties = (schema as QuerySchema | undefined)?.properties;
  if (properties === undefined || typeof query !== 'object' || query === null) return;
  for (const [name, value] of Object.entries(query)) {
    const declared = Object.hasOwn(properties, name) ? properties[name] : undefined;
    if (declared === undefined) {
      const message = 'is not a query parameter of this route';
      throw invalidInput(`${name}: ${message}`, [{ code: 'invalid_input', message, field: name }]);
    }
    if (Array.isArray(value) && declared.type !== 'array') {
      const message = `given ${value.length} times; it takes one value`;
      throw invalidInput(`${name}: ${message}`, [{ code: 'invalid_input', message, field: name }]);
    }
  }
}
