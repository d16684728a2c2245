// The JSON body parser of both programs. fastify's own turns every failure, a `__proto__` key
// included, into "Body is not valid JSON"; this one says what is wrong: where the syntax breaks,
// or which key is refused. Keys that could reach an object's prototype (`__proto__`, and
// `constructor` holding a `prototype`) are refused outright rather than dropped: a client that
// sends them is either confused or probing, and either way should hear why.

import type { FastifyInstance } from 'fastify';
import { badRequest } from './errors.ts';

export function installJsonBodyParser(app: FastifyInstance): void {
  // No route takes text bodies: text/plain is a 415 like any other type nobody parses.
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = body as string;
    if (text.trim() === '') {
      done(badRequest('the request body is empty but content-type is application/json'), undefined);
      return;
    }
    try {
      done(null, parseJsonBody(text));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
}

/** `JSON.parse` with a clear error for bad syntax and for prototype-reaching keys. */
export function parseJsonBody(text: string): unknown {
  let refused: string | undefined;
  let value: unknown;
  try {
    value = JSON.parse(text, function (this: unknown, key: string, item: unknown) {
      if (key === '__proto__') refused ??= '__proto__';
      else if (key === 'constructor' && typeof item === 'object' && item !== null && Object.hasOwn(item, 'prototype')) refused ??= 'constructor.prototype';
      return item;
    });
  } catch (err) {
    throw badRequest(`the request body is not valid JSON: ${(err as Error).message}`);
  }
  if (refused !== undefined) throw badRequest(`the request body contains the key "${refused}", which is not allowed`);
  return value;
}
