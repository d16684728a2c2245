// 405 for a known path asked with another method. fastify answers every unmatched request with
// its not-found handler; this keeps a table of each route's path pattern and methods (filled by
// the onRoute hook, so it sees every route however it is registered) so the handler can tell
// "no such path" (404) from "no such method here" (405, with `Allow`).

import type { FastifyInstance } from 'fastify';

export class RouteMethods {
  private readonly routes: Array<{ pattern: RegExp; methods: Set<string> }> = [];
  private readonly byUrl = new Map<string, Set<string>>();

  /** Start recording `app`'s routes; call before any route is registered. */
  static record(app: FastifyInstance): RouteMethods {
    const table = new RouteMethods();
    app.addHook('onRoute', (route) => {
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      table.add(route.url, methods);
    });
    return table;
  }

  add(url: string, methods: readonly string[]): void {
    let set = this.byUrl.get(url);
    if (!set) {
      set = new Set();
      this.byUrl.set(url, set);
      this.routes.push({ pattern: patternOf(url), methods: set });
    }
    for (const method of methods) set.add(method.toUpperCase());
  }

  /** The methods `path` answers to, sorted; empty when no route has this path. */
  allowed(path: string): string[] {
    const methods = new Set<string>();
    for (const route of this.routes) if (route.pattern.test(path)) for (const m of route.methods) methods.add(m);
    return [...methods].sort();
  }
}

/** `/browsers/:id/telemetry` → `^/browsers/[^/]+/telemetry$`; `*` matches the rest. */
function patternOf(url: string): RegExp {
  const source = url
    .split('/')
    .map((segment) => {
      if (segment === '*') return '.*';
      if (segment.startsWith(':')) return '[^/]+';
      return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('/');
  return new RegExp(`^${source}/?$`);
}
