// Bearer tokens and their scopes (docs/configuration.md, --tokens-file): --token, --tokens-file and the
// `tokens` option, checked into grants. Errors are BadValue lines naming the JSON path.

import { readFileSync } from 'node:fs';
import { BadValue, rejection, show } from '../settings.ts';
import { SCOPES, type Scope, type TokenGrant } from './scopes.ts';
import { isTokenText, kinds } from './settings-table.ts';

export type { Scope, TokenGrant } from './scopes.ts';
export { SCOPES } from './scopes.ts';

/** Grants from a --tokens-file (a JSON array of {token, scopes}). */
export function loadTokensFile(path: string): TokenGrant[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'read error';
    throw new BadValue(`cannot read ${show(path)} (${code})`, { cause: err });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    // V8's message quotes the text, which holds tokens: keep only the position (and no `cause`).
    const position = /position (\d+)/.exec((err as Error).message)?.[1];
    throw new BadValue(`${show(path)} is not valid JSON${position ? ` (at position ${position})` : ''}`);
  }
  try {
    return validateGrants(json, '');
  } catch (err) {
    if (err instanceof BadValue) throw new BadValue(`${show(path)}: ${err.message}`, { cause: err });
    throw err;
  }
}

/** Check an untrusted array of grants; `prefix` starts every JSON path (`tokens` or empty). */
export function validateGrants(value: unknown, prefix: string): TokenGrant[] {
  if (!Array.isArray(value)) throw new BadValue(`${prefix || '$'}: expected a JSON array of {"token", "scopes"} objects`);
  if (value.length === 0) throw new BadValue(`${prefix || '$'}: expected at least one {"token", "scopes"} entry`);
  const grants: TokenGrant[] = [];
  value.forEach((entry: unknown, index) => {
    const at = `${prefix}[${index}]`;
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
      throw new BadValue(`${at}: expected an object {"token", "scopes"}`);
    }
    for (const key of Object.keys(entry)) {
      if (key !== 'token' && key !== 'scopes') throw new BadValue(`${at}.${key}: unknown key (expected token, scopes)`);
    }
    const { token, scopes } = entry as { token?: unknown; scopes?: unknown };
    if (typeof token !== 'string' || !isTokenText(token)) {
      throw new BadValue(`${at}.token: ${rejection(kinds.token, token)}`);
    }
    if (!Array.isArray(scopes) || scopes.length === 0) {
      throw new BadValue(`${at}.scopes: expected a non-empty array of scopes (${SCOPES.join(', ')})`);
    }
    scopes.forEach((scope: unknown, i) => {
      if (!(SCOPES as readonly unknown[]).includes(scope)) {
        throw new BadValue(`${at}.scopes[${i}]: unknown scope ${show(scope)} (expected one of ${SCOPES.join(', ')})`);
      }
    });
    grants.push({ token, scopes: [...new Set(scopes as Scope[])] });
  });
  return grants;
}

/** Append grants, rejecting a token already configured (by --token or an earlier entry). */
export function addGrants(into: TokenGrant[], grants: TokenGrant[], prefix: string): void {
  const known = new Set(into.map((g) => g.token));
  grants.forEach((grant, index) => {
    if (known.has(grant.token)) throw new BadValue(`${prefix}[${index}].token: duplicate token (each token may appear once)`);
    known.add(grant.token);
    into.push(grant);
  });
}
