// An error answer written on a raw socket, where there is no fastify reply to send it on: a
// refused WebSocket upgrade (the CDP endpoints of both programs) and HTTP too malformed to parse.
// The one writer of such answers: the same error body, status line and headers as every other
// error of either program (docs/operations.md "Threat model").

import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ApiError } from './errors.ts';

/** Writes `error` as an HTTP/1.1 response and ends the socket (nothing when it is gone already). */
export function endWithError(socket: Duplex, error: ApiError<string>): void {
  if (socket.destroyed || !socket.writable) return;
  const body = JSON.stringify(error.toBody());
  let head = `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? 'Error'}\r\n`;
  head += 'Content-Type: application/json; charset=utf-8\r\n';
  head += `Content-Length: ${Buffer.byteLength(body)}\r\n`;
  for (const [name, value] of Object.entries(error.headers)) head += `${name}: ${value}\r\n`;
  socket.end(`${head}Connection: close\r\n\r\n${body}`);
}
