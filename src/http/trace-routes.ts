// GET /browsers/{id}/trace: the session as a Playwright trace archive (docs/export.md
// "Playwright trace"), streamed while the history is read. The query and the size cap are checked
// before the first byte goes out, so a bad query or a window too large gets the JSON error body.

import type { FastifyInstance } from 'fastify';
import type { TraceEventSource, TraceRow } from '../export/trace-archive.ts';
import type { EventFilter } from '../stream/event-filter.ts';
import { HistoryReader, type HistoryRequest } from '../stream/history.ts';
import { VERSION } from '../version.ts';
import { replayScreencast } from '../replay/trace-screencast.ts';
import type { TelemetryEvent } from '../../injected/schema.ts';
import type { BearerAuth } from './auth.ts';
import { browserGuard, browserParamsSchema } from './browser-guard.ts';
import { exportQuerySchema, exportWindow, type ExportQuery } from './export-query.ts';
import { sendTrace } from './export-reply.ts';
import { BROWSER_ERRORS, errorResponses } from './schemas.ts';
import type { HttpDeps } from './http-deps.ts';

const traceQuerySchema = exportQuerySchema({
  targetId: 'Only the events of these targets (repeat or comma-separate)',
  navSeq: 'Only these navigations of their tab: the events that carry this nav_seq, and the requests of these pages',
});

export const traceResponseSchema = {
  description: 'A Playwright trace archive (format version 8): open it with `npx playwright show-trace <file>` or at trace.playwright.dev',
  content: { 'application/zip': { schema: { type: 'string', format: 'binary' } } },
} as const;

/** History pages read per event-loop turn by all of an agent's trace exports together (docs/export.md "Limits"). */
const PAGES_PER_TURN = 1;

/**
 * Trace archives built at once by one agent (docs/export.md "Limits"); later exports wait in a
 * queue, first come first served. Every export being built holds its pages, zip buffers and
 * deflate state: 20 at once make a heap whose collections stop the event loop for long stretches.
 * A slot covers the building only: what a slow client has not read yet waits in a spool.
 */
const EXPORTS_AT_ONCE = 2;

export function registerTraceRoutes(app: FastifyInstance, deps: HttpDeps, auth: BearerAuth): void {
  const history = deps.history ?? new HistoryReader(deps.log, undefined);
  // One gate for every export of this agent: 20 exports at once read one page per turn.
  const turns = new TurnGate(PAGES_PER_TURN);
  const slots = new Slots(EXPORTS_AT_ONCE);
  app.get(
    '/browsers/:id/trace',
    {
      onRequest: browserGuard(deps, auth, 'telemetry:read'),
      schema: {
        summary: 'The session as a Playwright trace archive (scope telemetry:read)',
        description:
          "Actions (computer batch actions, CDP commands, API calls, the page's own clicks, keys and scrolls, navigations), network entries with bodies, console messages, page errors with their stacks, and the monitor's screenshots and the replays' frames as the filmstrip; no DOM snapshots. Streamed as the history is read; 413 when the window holds more than 1 GiB of events.",
        tags: ['telemetry'],
        params: browserParamsSchema,
        querystring: traceQuerySchema,
        response: {
          200: traceResponseSchema,
          ...errorResponses(400, 413, ...BROWSER_ERRORS),
        },
      },
    },
    async (request, reply) => {
      const { filter, sinceTs, untilTs } = exportWindow(request.query as ExportQuery);
      const source = historySource(history, sinceTs, untilTs, deps.log.latestSeq, turns);
      const creator = { name: 'browser-telemetry-agent', version: VERSION };
      // The replays' frames as the screencast (docs/export.md "Screencast"); a tab filter keeps
      // them too: they are of the tab in front, which the events do not say.
      const replays = deps.replays;
      const screencast = replays === undefined ? undefined : () => replayScreencast(replays.screencastReplays(), { sinceTs, untilTs });
      // The slot is held while the archive is built: until it is all sent or spooled (a slow
      // client reads the rest from the spool), or the client is gone (the socket closes).
      const release = await slots.acquire();
      reply.raw.once('close', release);
      try {
        const trace = { sessionId: deps.sessionId, filter, creator, built: release, ...(screencast ? { screencast } : {}) };
        return await sendTrace(request, reply, source, trace, 'trace export');
      } catch (err) {
        release();
        throw err;
      }
    },
  );
}

/** At most `size` holders at once, the others wait first come first served; release is idempotent. */
export class Slots {
  private readonly waiting: Array<() => void> = [];
  private held = 0;

  constructor(private readonly size: number) {}

  async acquire(): Promise<() => void> {
    if (this.held < this.size) this.held++;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next === undefined) this.held--;
      else next();
    };
  }
}

/**
 * Lets at most `perTurn` waiters go per event-loop turn (setImmediate), first come first served:
 * synchronous work split into pages and gated here costs a turn at most `perTurn` pages however
 * many callers there are, so the other requests (/healthz) run between turns.
 */
export class TurnGate {
  private readonly waiting: Array<() => void> = [];
  private scheduled = false;

  constructor(private readonly perTurn: number) {}

  wait(): Promise<void> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      for (const resolve of this.waiting.splice(0, this.perTurn)) resolve();
      if (this.waiting.length > 0) this.schedule();
    });
  }
}

/**
 * The history read as the trace's event source: a window, bounded by the seq the export began at.
 * Each page is read synchronously, after `turns` lets it go (without one: after a turn of its own).
 */
export function historySource(
  history: HistoryReader,
  sinceTs: number | undefined,
  untilTs: number | undefined,
  lastSeq: number,
  turns?: TurnGate,
): TraceEventSource {
  return {
    sinceTs,
    async *pages(filter: EventFilter | undefined, pageSize: number, fromStart = false): AsyncGenerator<TraceRow[]> {
      let offset: number | undefined;
      for (;;) {
        // Let other requests run between pages: the reads are synchronous.
        await (turns === undefined ? new Promise<void>((resolve) => setImmediate(resolve)) : turns.wait());
        const page = readRows(history, { filter, order: 'asc', offset, sinceTs: fromStart ? undefined : sinceTs, untilTs, limit: pageSize }, lastSeq);
        if (page.rows.length > 0) yield page.rows;
        if (page.done) return;
        offset = page.nextOffset;
      }
    },
    storedBytes: () => history.storedBytes(),
    event(row: TraceRow): TelemetryEvent {
      return (JSON.parse(row.text) as { event: TelemetryEvent }).event;
    },
  };
}

/**
 * One page of rows up to `lastSeq`. The page's texts are held by the rows alone, so a pass that
 * empties the array it was given lets go of them.
 */
function readRows(history: HistoryReader, request: HistoryRequest, lastSeq: number): { rows: TraceRow[]; done: boolean; nextOffset: number } {
  const page = history.read(request);
  const rows: TraceRow[] = [];
  for (const text of page.items) {
    // The envelope begins `{"seq":<seq>,` (sse-frame.ts).
    const seq = Number.parseInt(text.slice(7, text.indexOf(',', 7)), 10);
    if (seq > lastSeq) return { rows, done: true, nextOffset: page.nextOffset };
    rows.push({ seq, text });
  }
  return { rows, done: !page.hasMore, nextOffset: page.nextOffset };
}
