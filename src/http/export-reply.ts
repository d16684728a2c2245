// How the agent and the gateway send an export (docs/export.md): a HAR or a Playwright trace is
// streamed as it is built, named after the session; a failure once streaming has begun can only
// be logged (the status is gone), a trace over the size cap is 413 before the first byte.

import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { checkTraceSize, traceArchive, type ScreencastPicture, type TraceEventSource, type TraceRequest } from '../export/trace-archive.ts';
import type { EventFilter } from '../stream/event-filter.ts';
import { spooled } from './export-spool.ts';
import { TRACE_MAX_EVENT_BYTES, tooLarge } from './trace-errors.ts';

/** Streams a HAR document from its `pieces` as `<sessionId>.har`; `what` names it in the log. */
export function sendHar(
  request: FastifyRequest,
  reply: FastifyReply,
  pieces: Iterable<string> | AsyncIterable<string>,
  sessionId: string,
  what: string,
): FastifyReply {
  const body = Readable.from(pieces, { objectMode: false });
  body.on('error', (err) => request.log.warn({ err: err.message }, `${what} failed while streaming`));
  return reply.type('application/json; charset=utf-8').header('Content-Disposition', `attachment; filename="${sessionId}.har"`).send(body);
}

/** Which trace to send: the session's, the export window's filter, and who made it. */
export interface TraceOf {
  sessionId: string;
  filter: EventFilter | undefined;
  creator: { name: string; version: string };
  /** A replay's pictures as the trace's screencast (docs/export.md "Screencast"). */
  screencast?: () => AsyncIterable<ScreencastPicture>;
  /** Called once the archive is built (all of it sent or spooled), failed, or its client has gone. */
  built?: () => void;
}

/**
 * Checks the size cap (413, TRACE_MAX_EVENT_BYTES), then streams the trace archive of `source`
 * as `<sessionId>.trace.zip`; `what` names it in the log. The archive is built at its own pace and
 * spooled (export-spool.ts): a slow client costs a temporary file, not the building work.
 */
export async function sendTrace(request: FastifyRequest, reply: FastifyReply, source: TraceEventSource, trace: TraceOf, what: string): Promise<FastifyReply> {
  const traceRequest: TraceRequest = {
    sessionId: trace.sessionId,
    targetIds: trace.filter?.targetIds,
    navSeqs: trace.filter?.navSeqs,
    creator: trace.creator,
    maxBytes: TRACE_MAX_EVENT_BYTES,
    ...(trace.screencast === undefined ? {} : { screencast: trace.screencast }),
  };
  await checkTraceSize(source, traceRequest).catch(tooLarge);
  let failed = false;
  const archive = await traceArchive(source, traceRequest, (err) => {
    failed = true;
    request.log.warn({ err: err.message }, `${what} failed while streaming`);
  });
  const body = spooled(archive, trace.built ?? (() => undefined));
  // The spool's own failures (its temporary file); the archive's are logged above.
  body.once('error', (err) => {
    if (!failed) request.log.warn({ err: err.message }, `${what} failed while spooling`);
  });
  return reply.type('application/zip').header('Content-Disposition', `attachment; filename="${traceRequest.sessionId}.trace.zip"`).send(body);
}
