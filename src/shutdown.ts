// How both programs stop: on SIGTERM or SIGINT, close once and exit 0, when closed or at the
// deadline, whatever the browser or the database does meanwhile.

/** docs/configuration.md: exit 0 within 5 s of a signal. */
const SHUTDOWN_DEADLINE_MS = 4500;

export function closeOnSignals(program: string, close: () => Promise<void>): void {
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => process.exit(0), SHUTDOWN_DEADLINE_MS).unref();
    close().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`${program}: error during shutdown after ${signal}: ${(err as Error).message}\n`);
        process.exit(0);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
