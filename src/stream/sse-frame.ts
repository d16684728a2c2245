// SSE wire framing (docs/events.md). Only two frame shapes ever reach the wire: an event frame and a
// keepalive comment. There is never an `event:` field: clients dispatch on the envelope's `type`.

import { EVENT_TYPE_CATEGORY, type EventSource, type TelemetryEvent } from '../../injected/schema.ts';

/** `id: <seq>\ndata: <json>\n\n`. The JSON must be on one line (JSON.stringify output is). */
export function eventFrameText(seq: number, envelopeJson: string): string {
  return `id: ${seq}\ndata: ${envelopeJson}\n\n`;
}

/** Bytes of the `data: ` field name before an event frame's JSON. */
const DATA_PREFIX_BYTES = 'data: '.length;

/** The envelope JSON of an event frame (eventFrameText's `<json>`), as a view of the frame's bytes: no copy. */
export function envelopeBytesOf(frame: Buffer): Buffer {
  return frame.subarray(frame.indexOf(10) + 1 + DATA_PREFIX_BYTES, frame.length - 2);
}

/** The envelope JSON of an event frame, as text. */
export function envelopeJsonOf(frame: Buffer): string {
  return frame.toString('utf8', frame.indexOf(10) + 1 + DATA_PREFIX_BYTES, frame.length - 2);
}

/** JSON of the frozen sources that events share (TargetState.sourceOf, AGENT_SOURCE). */
const sharedSourceJson = new WeakMap<EventSource, string>();

function sourceJson(source: EventSource): string {
  if (!Object.isFrozen(source)) return JSON.stringify(source);
  let json = sharedSourceJson.get(source);
  if (json === undefined) {
    json = JSON.stringify(source);
    sharedSourceJson.set(source, json);
  }
  return json;
}

/**
 * The frame of the envelope `{ seq, event }` as text (the event log writes it into its own
 * memory): what JSON.stringify writes for an event built in order (ts, type, category, source,
 * data, truncated), except that a frozen source, which every event of a target and CDP method
 * shares, is serialized only once, and `category` comes from the type's table.
 * A fifth of a console event's JSON is its source; serializing is most of what admitting it costs.
 * Whatever the event, the frame is valid JSON (a missing ts or type would be `null`, not omitted).
 */
export function envelopeFrameText(seq: number, event: TelemetryEvent): string {
  const ts = JSON.stringify(event.ts) ?? 'null';
  const type = JSON.stringify(event.type) ?? 'null';
  const category = EVENT_TYPE_CATEGORY[event.type] ?? 'monitor';
  let json = `{"seq":${seq},"event":{"ts":${ts},"type":${type},"category":"${category}","source":${sourceJson(event.source)}`;
  if (event.data !== undefined) json += `,"data":${JSON.stringify(event.data)}`;
  if (event.truncated === true) json += ',"truncated":true';
  return eventFrameText(seq, `${json}}}`);
}

/** A comment frame: ignored by EventSource parsers, keeps proxies and idle timeouts at bay. */
export const KEEPALIVE_COMMENT = ': keepalive';
export const KEEPALIVE_FRAME: Buffer = Buffer.from(`${KEEPALIVE_COMMENT}\n\n`, 'utf8');
