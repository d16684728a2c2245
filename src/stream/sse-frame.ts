// SSE wire framing (SPEC §5). Only two frame shapes ever reach the wire: an event frame and a
// keepalive comment. There is never an `event:` field: clients dispatch on the envelope's `type`.

/** `id: <seq>\ndata: <json>\n\n`. The JSON must be on one line (JSON.stringify output is). */
export function encodeEventFrame(seq: number, envelopeJson: string): Buffer {
  return Buffer.from(`id: ${seq}\ndata: ${envelopeJson}\n\n`, 'utf8');
}

/** A comment frame: ignored by EventSource parsers, keeps proxies and idle timeouts at bay. */
export const KEEPALIVE_FRAME: Buffer = Buffer.from(': keepalive\n\n', 'utf8');
