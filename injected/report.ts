// Reporting to the agent through the CDP binding. The binding exists only in the script's isolated
// world, whose globals (JSON, the binding itself) the page can neither see nor replace.

import type { PageScriptReport } from './schema.ts';

export type Report = (report: PageScriptReport) => void;

export function createReporter(bindingName: string): Report {
  const global = globalThis as unknown as Record<string, unknown>;
  return (report) => {
    // Looked up at each call: the agent re-adds the binding (a new function) when it turns its
    // Runtime domain back on.
    const binding = global[bindingName];
    if (typeof binding !== 'function') return;
    try {
      (binding as (payload: string) => void)(JSON.stringify(report));
    } catch {
      // Never let a report throw into an event dispatch.
    }
  };
}
