// The fake agents of the gateway's tests listen on a free port of 127.0.0.1 and close with their
// connections.

import type { Server as HttpServer } from 'node:http';
import type { AddressInfo, Server } from 'node:net';

/** Listens on a free port of 127.0.0.1; the server's `http://` URL. */
export async function listenLocally(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Closes an HTTP server with every connection it has open. */
export async function closeWithConnections(server: HttpServer): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}
