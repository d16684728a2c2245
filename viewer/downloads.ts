// "Download events (JSON lines)": the whole history from the agent's history endpoint when it has
// one (paged with X-Has-More / X-Next-Offset), else the envelopes this page holds.

import type { Envelope } from '../injected/schema.ts';

const PAGE_SIZES = [1000, 100];
/** A history longer than this many pages is cut (a loop guard, not an expected size). */
const MAX_PAGES = 10_000;

/** Every envelope of the history endpoint as JSON lines; undefined when it fails. */
export async function historyLines(session: URL, progress: (count: number) => void): Promise<string[] | undefined> {
  for (const limit of PAGE_SIZES) {
    const lines: string[] = [];
    let offset = 0;
    let refused = false;
    for (let page = 0; page < MAX_PAGES; page++) {
      const url = new URL(`telemetry/events?order=asc&limit=${limit}&offset=${offset}`, session);
      const response = await fetch(url, { credentials: 'same-origin', cache: 'no-store' });
      if (response.status === 400 && page === 0) {
        // A smaller page size may be within the endpoint's bounds.
        refused = true;
        break;
      }
      if (!response.ok) return undefined;
      const envelopes = (await response.json()) as Envelope[];
      for (const envelope of envelopes) lines.push(JSON.stringify(envelope));
      progress(lines.length);
      const next = Number(response.headers.get('x-next-offset'));
      if (response.headers.get('x-has-more') !== 'true' || !Number.isSafeInteger(next) || next <= offset) return lines;
      offset = next;
    }
    if (!refused) return lines;
  }
  return undefined;
}

/** Saves `lines` as a file named `name`. */
export function saveLines(lines: readonly string[], name: string): void {
  const blob = new Blob(lines.length === 0 ? [] : [lines.join('\n'), '\n'], { type: 'application/x-ndjson' });
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
