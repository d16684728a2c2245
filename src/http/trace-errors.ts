// The trace's size cap and its error (docs/export.md "Playwright trace"), applied by sendTrace
// (export-reply.ts) for the agent's trace route and the gateway's.

import { TraceTooLargeError } from '../export/trace-archive.ts';
import { ApiError } from './errors.ts';

/** The most event bytes (stored JSON) a trace is built from (docs/export.md "Limits"). */
export const TRACE_MAX_EVENT_BYTES = 1 << 30;

/** The size cap's error as the API's: 413 naming the filters that narrow the window. */
export function tooLarge(err: unknown): never {
  if (!(err instanceof TraceTooLargeError)) throw err;
  throw new ApiError(413, 'payload_too_large', err.message, [
    { code: 'payload_too_large', message: 'narrow the window with since and until', field: 'since' },
    { code: 'payload_too_large', message: 'narrow the window with since and until', field: 'until' },
    { code: 'payload_too_large', message: 'take one tab', field: 'target_id' },
    { code: 'payload_too_large', message: 'take one page of a tab', field: 'nav_seq' },
  ]);
}
