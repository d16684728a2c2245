// Integer query parameters (docs/events.md "Query parameters"), one rule for the agent's telemetry
// routes and the gateway's archive routes (through the shared HTTP kit).

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
