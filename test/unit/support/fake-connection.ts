// A stand-in for CdpConnection in unit tests: records commands in order, lets the test deliver
// events and decide how each command answers.
import type { CdpConnection } from '../../../src/browser/cdp-connection.ts';
import { IgnoredFailures } from '../../../src/browser/cdp-errors.ts';

export interface SentCommand {
  method: string;
  params: unknown;
  sessionId: string | undefined;
}

export class FakeConnection {
  readonly sent: SentCommand[] = [];
  private handlers = new Map<string, Array<(params: unknown, sessionId: string | undefined) => void>>();
  /** Per method: how to answer (default: resolve with {}). */
  readonly answers = new Map<string, (params: unknown, sessionId: string | undefined) => Promise<unknown>>();
  isConnected = true;
  /** What the best-effort commands on it let pass (CdpConnection.failures). */
  readonly failures = new IgnoredFailures();

  send(method: string, params?: unknown, sessionId?: string): Promise<unknown> {
    this.sent.push({ method, params, sessionId });
    const answer = this.answers.get(method);
    return answer ? answer(params, sessionId) : Promise.resolve({});
  }

  on(event: string, handler: (params: any, sessionId: string | undefined) => void): () => void {
    const list = this.handlers.get(event) ?? [];
    list.push(handler);
    this.handlers.set(event, list);
    return () =>
      this.handlers.set(
        event,
        (this.handlers.get(event) ?? []).filter((h) => h !== handler),
      );
  }

  emit(event: string, params: unknown, sessionId?: string): void {
    for (const handler of this.handlers.get(event) ?? []) handler(params, sessionId);
  }

  handlerCount(): number {
    let n = 0;
    for (const list of this.handlers.values()) n += list.length;
    return n;
  }

  asConnection(): CdpConnection {
    return this as unknown as CdpConnection;
  }

  commandsFor(sessionId: string): string[] {
    return this.sent.filter((c) => c.sessionId === sessionId).map((c) => c.method);
  }
}
