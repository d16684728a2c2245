// What every section of the bench is given by the orchestrator.

import type { Subscribers } from '../clients/consumers.ts';
import type { PageServer } from './pages.ts';

export interface BenchContext {
  quick: boolean;
  pages: PageServer;
  /** The long-lived SSE subscribers process. */
  subscribers: Subscribers;
  /** When set, agent hosts run under `node --cpu-prof` and write their profiles here. */
  profileDir: string | undefined;
  /**
   * A measured window (monotonic ms) of the profiles written under `dir`: the summaries keep only
   * samples inside such windows, so start-up and idle time do not hide the steady-state hot spots.
   * Windows with different labels are summarized separately.
   */
  profileWindow(dir: string | undefined, from: number, to: number, label?: string): void;
  /** Progress line on stderr. */
  log(line: string): void;
}

/** `items` rotated left by `by`: round r of an interleaved comparison starts with a different arm. */
export function rotate<T>(items: readonly T[], by: number): T[] {
  const k = ((by % items.length) + items.length) % items.length;
  return [...items.slice(k), ...items.slice(0, k)];
}
