// Request/response over the Node IPC channel between the orchestrator and its helper processes
// (agent host, bare client, subscribers). A helper answers `{ id, result }` or `{ id, error }`
// and may push unsolicited `{ event, ... }` messages (e.g. `ready`).

import type { ChildProcess } from 'node:child_process';

export interface IpcRequest {
  id: number;
  cmd: string;
  args?: unknown;
}

interface IpcReply {
  id: number;
  result?: unknown;
  error?: string;
}

export interface IpcEvent {
  event: string;
  [key: string]: unknown;
}

/** The orchestrator's side of one helper process. */
export class IpcPeer {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private readonly events: IpcEvent[] = [];
  private readonly eventWaiters: Array<{ name: string; resolve: (e: IpcEvent) => void; reject: (e: Error) => void }> = [];
  private exitError: Error | undefined;

  constructor(
    readonly child: ChildProcess,
    private readonly name: string,
  ) {
    child.on('message', (message: IpcReply | IpcEvent) => {
      if ('event' in message) this.onEvent(message);
      else this.onReply(message);
    });
    child.once('exit', (code, signal) => {
      this.exitError = new Error(`${name} exited (code ${code}, signal ${signal})`);
      for (const waiter of this.pending.values()) waiter.reject(this.exitError);
      this.pending.clear();
      for (const waiter of this.eventWaiters.splice(0)) waiter.reject(this.exitError);
    });
  }

  get pid(): number {
    return this.child.pid!;
  }

  request<T>(cmd: string, args?: unknown, timeoutMs = 60_000): Promise<T> {
    if (this.exitError) return Promise.reject(this.exitError);
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${this.name}: no answer to ${cmd} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, {
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v as T);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.child.send({ id, cmd, args } satisfies IpcRequest);
    });
  }

  /** The first pushed event called `name` (already received or coming). */
  waitForEvent(name: string, timeoutMs = 30_000): Promise<IpcEvent> {
    const index = this.events.findIndex((e) => e.event === name);
    if (index !== -1) return Promise.resolve(this.events.splice(index, 1)[0]!);
    if (this.exitError) return Promise.reject(this.exitError);
    return new Promise<IpcEvent>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.name}: no ${name} within ${timeoutMs} ms`)), timeoutMs);
      this.eventWaiters.push({
        name,
        resolve: (e) => {
          clearTimeout(timer);
          resolve(e);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
    });
  }

  private onReply(reply: IpcReply): void {
    const waiter = this.pending.get(reply.id);
    if (!waiter) return;
    this.pending.delete(reply.id);
    if (reply.error !== undefined) waiter.reject(new Error(`${this.name}: ${reply.error}`));
    else waiter.resolve(reply.result);
  }

  private onEvent(event: IpcEvent): void {
    const index = this.eventWaiters.findIndex((w) => w.name === event.event);
    if (index !== -1) this.eventWaiters.splice(index, 1)[0]!.resolve(event);
    else this.events.push(event);
  }
}

/** The helper's side: answer requests with `handlers[cmd](args)`. */
export function serveIpc(handlers: Record<string, (args: never) => unknown>): void {
  process.on('message', (message: IpcRequest) => {
    const handler = handlers[message.cmd];
    if (!handler) {
      process.send!({ id: message.id, error: `unknown command ${message.cmd}` });
      return;
    }
    Promise.resolve()
      .then(() => handler(message.args as never))
      .then(
        (result) => process.send!({ id: message.id, result: result ?? null }),
        (err: unknown) => process.send!({ id: message.id, error: (err as Error | undefined)?.stack ?? String(err) }),
      );
  });
  // The orchestrator went away (crash, SIGKILL): do not outlive it.
  process.on('disconnect', () => process.exit(0));
}

export function pushEvent(event: IpcEvent): void {
  process.send?.(event);
}
