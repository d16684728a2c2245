// Console category translators (docs/events.md#types): Runtime.consoleAPICalled and Runtime.exceptionThrown
// params in, console_log / console_error data out, with the field caps of docs/events.md#truncation-limits applied.
// Hot path: a busy tab logs 10k+ messages per second, so the common case allocates only the
// output and never serializes. The output shares stack frames with `params`, and the rare cut to
// fit maxEventDataBytes edits them in place: treat `params` as consumed.

import type { Protocol } from 'devtools-protocol';
import type { ConsoleErrorData, ConsoleLogData, EventContext } from '../../injected/schema.ts';
import type { Limits } from '../limits.ts';
import { withContext } from './event-context.ts';
import { renderRemoteObject } from './remote-object.ts';
import { capStackTrace, enforceDataLimit, truncateUtf8 } from './truncate.ts';

interface TranslatedConsoleLog {
  type: 'console_log';
  /** Unix microseconds. */
  ts: number;
  data: ConsoleLogData;
  truncated: boolean;
}

interface TranslatedConsoleError {
  type: 'console_error';
  /** Unix microseconds. */
  ts: number;
  data: ConsoleErrorData;
  truncated: boolean;
}

/** A translated console event; `type` tells which data shape it carries. */
export type Translated = TranslatedConsoleLog | TranslatedConsoleError;

/** `Runtime.consoleAPICalled`: type `error` → console_error, any other type → console_log. */
export function translateConsoleApiCalled(params: Protocol.Runtime.ConsoleAPICalledEvent, ctx: EventContext, limits: Limits): Translated {
  const cdpArgs = params.args;
  const maxBytes = limits.maxConsoleTextBytes;
  let truncated = cdpArgs.length > limits.maxConsoleArgs;
  const count = truncated ? limits.maxConsoleArgs : cdpArgs.length;
  const args = new Array<string>(count);
  for (let i = 0; i < count; i++) {
    const capped = truncateUtf8(renderRemoteObject(cdpArgs[i]!), maxBytes);
    if (capped.cut) truncated = true;
    args[i] = capped.value;
  }
  let text = '';
  if (count > 0) text = args[0]!;
  else if (cdpArgs.length > 0) {
    // maxConsoleArgs of 0 keeps no args, but `text` is still the first one.
    const capped = truncateUtf8(renderRemoteObject(cdpArgs[0]!), maxBytes);
    if (capped.cut) truncated = true;
    text = capped.value;
  }

  // Same object shape for both event types: console.error rows carry `level: 'error'` too.
  const data = withContext(ctx) as ConsoleLogData;
  data.level = params.type;
  data.text = text;
  data.args = args;
  if (params.stackTrace) {
    const stack = capStackTrace(params.stackTrace, limits.maxStackFrames);
    if (stack.cut) truncated = true;
    data.stack_trace = stack.value;
  }
  if (enforceDataLimit(data, limits.maxEventDataBytes)) truncated = true;

  const ts = epochMsToUs(params.timestamp);
  return isErrorCall(data) ? { type: 'console_error', ts, data, truncated } : { type: 'console_log', ts, data, truncated };
}

/** A console.error() call: a console_error with console_log's shape (its `level` is `error`). */
function isErrorCall(data: ConsoleLogData): data is ConsoleLogData & { level: 'error' } {
  return data.level === 'error';
}

/** `Runtime.exceptionThrown` → console_error with the message as DevTools shows it. */
export function translateExceptionThrown(params: Protocol.Runtime.ExceptionThrownEvent, ctx: EventContext, limits: Limits): Translated {
  const details = params.exceptionDetails;
  const capped = truncateUtf8(exceptionText(details), limits.maxConsoleTextBytes);
  let truncated = capped.cut;

  const data = withContext(ctx) as ConsoleErrorData;
  data.text = capped.value;
  data.line = details.lineNumber;
  data.column = details.columnNumber;
  if (details.url) data.source_url = details.url;
  if (details.stackTrace) {
    const stack = capStackTrace(details.stackTrace, limits.maxStackFrames);
    if (stack.cut) truncated = true;
    data.stack_trace = stack.value;
  }
  if (enforceDataLimit(data, limits.maxEventDataBytes)) truncated = true;

  return { type: 'console_error', ts: epochMsToUs(params.timestamp), data, truncated };
}

/**
 * `exceptionDetails.text` is only the prefix (`Uncaught`, `Uncaught (in promise)`); the message
 * comes from the thrown value: for errors the description without its `    at ...` stack lines
 * (a message may span several lines), for anything else the value rendered like a console
 * argument (`Uncaught boom`, `Uncaught (in promise) 42`, `Uncaught {code: 1}`).
 */
function exceptionText(details: Protocol.Runtime.ExceptionDetails): string {
  const exception = details.exception;
  if (!exception) return details.text;
  const message =
    exception.subtype === 'error' && exception.description !== undefined ? stripStackFrames(exception.description) : renderRemoteObject(exception);
  return details.text ? `${details.text} ${message}` : message;
}

/** V8 stack text is the message followed by one `\n    at ...` line per frame. */
function stripStackFrames(description: string): string {
  const firstFrame = description.indexOf('\n    at ');
  return firstFrame === -1 ? description : description.slice(0, firstFrame);
}

/** Runtime timestamps are epoch milliseconds (fractional); events carry integer Unix µs. */
function epochMsToUs(ms: number): number {
  return Math.round(ms * 1000);
}
