// What start-up has opened so far, closed in reverse order if a later step fails (startAgent):
// every resource is closed on any failure, and a close that fails does not stop the others.

export class CleanupStack<Name extends string = string> {
  private readonly entries: Array<{ name: Name; close: () => unknown }> = [];

  constructor(
    /** Told of a close that failed (the failure that started the unwinding is the one thrown). */
    private readonly onError: (name: Name, error: unknown) => void,
    /** Told of each close done, in order (tests). */
    private readonly onClosed?: (name: Name) => void,
  ) {}

  /** `close` undoes what was just opened. */
  push(name: Name, close: () => unknown): void {
    this.entries.push({ name, close });
  }

  /** The scope of the step `name`: what it opens is closed under its name; `reached` is told of its points. */
  scope(name: Name, reached?: (point: string) => void): StartScope {
    return { opened: (close) => this.push(name, close), reached: (point) => reached?.(point) };
  }

  /** Closes everything pushed, the last first. */
  async unwind(): Promise<void> {
    for (let entry = this.entries.pop(); entry !== undefined; entry = this.entries.pop()) {
      try {
        await entry.close();
      } catch (err) {
        this.onError(entry.name, err);
      }
      this.onClosed?.(entry.name);
    }
  }
}

/**
 * What one start-up step is given (src/agent.ts): where it registers how to close each resource
 * it opens, the moment the resource exists, so that a failure later in start-up closes it.
 */
export interface StartScope {
  /** `close` undoes what was just opened. */
  opened(close: () => unknown): void;
  /**
   * A point inside the step, after something was opened and before the step is done: the
   * start-up fault test (test/e2e/start-cleanup.test.ts) throws here to check that a failure
   * there leaves nothing behind. Does nothing otherwise.
   */
  reached(point: string): void;
}
