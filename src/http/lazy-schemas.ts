// Route schemas compiled on a route's first request instead of at start-up (docs/operations.md
// "Running it"). fastify compiles every route's validators (ajv) and response serializers
// (fast-json-stringify) when the route is added: about 29 MB of short-lived allocation in the
// agent's first second, enough to grow V8's young generation to twice the size it keeps for the
// rest of the run when Node's default heap settings apply. The compilers are fastify's own
// defaults, wrapped: a route that is never called is never compiled, one that is called compiles
// once. `compileEverySchema` compiles whatever is left, so a test can check every schema.

import { AjvCompiler } from '@fastify/ajv-compiler';
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';

type CompilersFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;
/** A compiled validator or serializer; ajv's validators report their failures in `errors`. */
type Compiled = ((data: unknown) => unknown) & { errors?: unknown };
type RouteCompiler = (route: unknown) => Compiled;
type Factory = (...args: unknown[]) => RouteCompiler;

/** fastify's compiler factories, wrapped to compile on first use, and a way to compile the rest. */
export function lazySchemas(): { compilersFactory: CompilersFactory; compileRest: () => number } {
  const pending = new Set<() => Compiled>();
  const lazily =
    (factory: Factory): Factory =>
    (...args) => {
      let compiler: RouteCompiler | undefined;
      return (route) => {
        let compiled: Compiled | undefined;
        const compile = (): Compiled => {
          if (compiled === undefined) {
            compiler ??= factory(...args);
            compiled = compiler(route);
            pending.delete(compile);
          }
          return compiled;
        };
        pending.add(compile);
        const call: Compiled = (data) => {
          const fn = compile();
          const result = fn(data);
          // fastify reads a failed validation's errors from the function it called.
          call.errors = fn.errors;
          return result;
        };
        return call;
      };
    };
  return {
    compilersFactory: {
      buildValidator: lazily(AjvCompiler() as unknown as Factory) as unknown as CompilersFactory['buildValidator'],
      buildSerializer: lazily(SerializerSelector() as unknown as Factory) as unknown as CompilersFactory['buildSerializer'],
    },
    compileRest() {
      let count = 0;
      for (const compile of [...pending]) {
        compile();
        count++;
      }
      return count;
    },
  };
}

const compileRestOf = new WeakMap<FastifyInstance, () => number>();

/** Registers the server's lazy schemas, for compileEverySchema. */
export function trackSchemas(app: FastifyInstance, compileRest: () => number): void {
  compileRestOf.set(app, compileRest);
}

/** Compiles every schema of `app`'s routes not compiled yet (after `ready()`); returns how many. Throws the first that fails. */
export function compileEverySchema(app: FastifyInstance): number {
  return compileRestOf.get(app)?.() ?? 0;
}
