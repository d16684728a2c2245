// Telemetry.addStep (docs/events.md "Steps"): the one CDP method the proxy answers itself and never
// relays to the browser, so that a client marks steps on the connection it already has (a
// Playwright CDPSession, a raw client). Pure: a client message in, the answer's text out.
//
// `{"id":1,"method":"Telemetry.addStep","params":{"name":"log in","data":{...},"parent_id":"step-…"},"sessionId":"…"}`
// is answered `{"id":1,"result":{"step_id":"step-…","recorded":true},"sessionId":"…"}`, or with a
// CDP error whose message says what was wrong and whose `data` is the error registry's code.

import { STEP_LIMITS, StepError, type StepCaller, type Steps } from '../control/steps.ts';

export const STEP_METHOD = 'Telemetry.addStep';

/** The method's name as it appears in a command's JSON: only messages that hold it are parsed. */
const NEEDLE = Buffer.from(`"${STEP_METHOD}"`, 'latin1');

/**
 * The largest message parsed: room for a name and 16 KB of data written with every escape. A larger
 * one whose head names the method is refused unparsed (parsing a client's hundreds of MiB would
 * stall every client); one that only holds the name somewhere else is relayed as it is.
 */
export const MAX_STEP_MESSAGE_BYTES = 256 * 1024;
/** How much of an over-long message's head (and tail) is read for its id, method and session. */
const HEAD_BYTES = 1024;
const HEAD_METHOD = /"method"\s*:\s*"Telemetry\.addStep"/;
/** The id only where clients put it, first: an `id` inside the params must not be taken for it. */
const HEAD_ID = /^\s*\{\s*"id"\s*:\s*(\d{1,15})\s*,/;
const HEAD_SESSION = /"sessionId"\s*:\s*"([^"\\]{1,128})"/;

/** JSON-RPC's codes, as Chromium answers them. */
const INVALID_REQUEST = -32600;
const INVALID_PARAMS = -32602;
const SERVER_ERROR = -32000;

export interface StepCommand {
  id: unknown;
  sessionId: string | undefined;
  params: unknown;
  /** Over MAX_STEP_MESSAGE_BYTES: refused without being parsed. */
  tooLarge?: true;
}

/** The command when `data` (a client's text message) is Telemetry.addStep; undefined for anything else. */
export function stepCommandOf(data: Buffer): StepCommand | undefined {
  if (data.indexOf(NEEDLE) === -1) return undefined;
  if (data.length > MAX_STEP_MESSAGE_BYTES) {
    const head = data.toString('latin1', 0, HEAD_BYTES);
    if (!HEAD_METHOD.test(head)) return undefined;
    const id = HEAD_ID.exec(head)?.[1];
    // Clients put the session first or last (Playwright: last).
    const sessionId = HEAD_SESSION.exec(head)?.[1] ?? HEAD_SESSION.exec(data.toString('latin1', data.length - HEAD_BYTES))?.[1];
    return { id: id === undefined ? undefined : Number(id), sessionId, params: undefined, tooLarge: true };
  }
  let message: unknown;
  try {
    message = JSON.parse(data.toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof message !== 'object' || message === null) return undefined;
  const { id, method, params, sessionId } = message as { id?: unknown; method?: unknown; params?: unknown; sessionId?: unknown };
  if (method !== STEP_METHOD) return undefined;
  return { id, sessionId: typeof sessionId === 'string' ? sessionId : undefined, params };
}

/** Marks the step for `caller` and answers the command (a result or a CDP error), as JSON text. */
export function answerStepCommand(command: StepCommand, steps: Steps, caller: StepCaller): string {
  const session = command.sessionId === undefined ? {} : { sessionId: command.sessionId };
  if (command.tooLarge === true) {
    const message = `${STEP_METHOD}: the message is over ${MAX_STEP_MESSAGE_BYTES} bytes (data: at most ${STEP_LIMITS.maxDataBytes} bytes of JSON)`;
    return JSON.stringify({
      ...(command.id === undefined ? {} : { id: command.id }),
      error: { code: INVALID_PARAMS, message, data: 'payload_too_large' },
      ...session,
    });
  }
  // Chromium's own answer to a command without an integer id.
  if (typeof command.id !== 'number' || !Number.isInteger(command.id))
    return JSON.stringify({ error: { code: INVALID_REQUEST, message: "Message must have integer 'id' property" }, ...session });
  try {
    const result = steps.add(command.params ?? {}, caller);
    return JSON.stringify({ id: command.id, result, ...session });
  } catch (err) {
    // Anything else is the agent's fault; the relay, which called from a socket's handler, goes on.
    const error =
      err instanceof StepError
        ? { code: err.code === 'rate_limited' ? SERVER_ERROR : INVALID_PARAMS, message: `${STEP_METHOD}: ${err.message}`, data: err.code }
        : { code: SERVER_ERROR, message: `${STEP_METHOD}: internal error`, data: 'internal_error' };
    return JSON.stringify({ id: command.id, error, ...session });
  }
}
