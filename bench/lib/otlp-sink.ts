// An OTLP/HTTP receiver for the bench's "OTLP on" arms: it answers every request 200 after
// reading its body, and counts requests and bytes. What the agent's export costs, not what a real
// collector does with it (docs/export.md).

import http from 'node:http';
import type { AddressInfo } from 'node:net';

export class OtlpSink {
  requests = 0;
  bytes = 0;
  private constructor(private readonly server: http.Server) {}

  static async start(): Promise<OtlpSink> {
    const server = http.createServer((req, res) => {
      req.on('data', (chunk: Buffer) => (sink.bytes += chunk.length));
      req.on('end', () => {
        sink.requests++;
        res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/x-protobuf' }).end();
      });
    });
    const sink = new OtlpSink(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return sink;
  }

  /** The logs endpoint to give the agent (`--otlp-endpoint` takes the base URL). */
  get baseUrl(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
