#!/usr/bin/env node
// CLI of browser-telemetry-gateway: parse flags/env, then serve (stopping on SIGTERM/SIGINT) or
// run `create-key`.

import { readFileSync } from 'node:fs';
import { ConfigError } from 'browser-telemetry-agent/program';
import { closeOnSignals } from 'browser-telemetry-agent/program';
import { parseGatewayCommandLine, type GatewayConfig } from './config.ts';
import { createKeyFromCommandLine, CreateKeyError } from './create-key.ts';
import { startGatewayWithConfig, type Gateway } from './gateway.ts';
import { describeStorage } from './storage/open-store.ts';

const PROGRAM = 'browser-telemetry-gateway';

/** package.json is one level up from dist/gateway.js, two from src/gateway/main.ts. */
function version(): string {
  for (const relative of ['../package.json', '../../package.json']) {
    try {
      return (JSON.parse(readFileSync(new URL(relative, import.meta.url), 'utf8')) as { version: string }).version;
    } catch {
      // try the next location
    }
  }
  return 'unknown';
}

function fail(message: string, status: number): never {
  process.stderr.write(`${PROGRAM}: ${message}\n`);
  process.exit(status);
}

async function serve(config: GatewayConfig): Promise<void> {
  let gateway: Gateway;
  try {
    gateway = await startGatewayWithConfig(config);
  } catch (err) {
    fail(`could not start: ${(err as Error).message}`, 1);
  }
  process.stderr.write(
    `${PROGRAM} ${version()} listening on ${gateway.url}\n  storage: ${describeStorage(config.storage)}\n` +
      `\nCreate an API key (printed once):\n  ${PROGRAM} create-key --name admin` +
      (config.storage.kind === 'sqlite' ? ` --data-dir ${config.storage.dataDir}\n` : ' --database-url "$GATEWAY_DATABASE_URL"\n'),
  );
  closeOnSignals(PROGRAM, () => gateway.close());
}

async function main(): Promise<void> {
  let command;
  try {
    command = parseGatewayCommandLine(process.argv.slice(2), process.env);
  } catch (err) {
    if (err instanceof ConfigError) fail(err.message, 2);
    throw err;
  }
  switch (command.kind) {
    case 'help':
      process.stdout.write(command.text);
      return;
    case 'version':
      process.stdout.write(`${version()}\n`);
      return;
    case 'serve':
      return serve(command.config);
    case 'create-key': {
      try {
        const { key, record, permissionChanges } = await createKeyFromCommandLine(command.options);
        if (permissionChanges.length > 0) {
          const changed = permissionChanges.map((c) => `${c.path} ${c.from} → ${c.to}`).join(', ');
          process.stderr.write(`${PROGRAM}: the SQLite storage was readable by others, now private: ${changed}\n`);
        }
        // stdout carries the key alone, so `KEY=$(browser-telemetry-gateway create-key ...)` works.
        process.stdout.write(`${key}\n`);
        const scope = record.projectId === null ? 'organization-wide' : `project ${record.projectId} (${record.projectName})`;
        const expiry = record.expiresAt === null ? 'never expires' : `expires ${new Date(record.expiresAt).toISOString()}`;
        process.stderr.write(`${PROGRAM}: created API key ${record.id} "${record.name}", ${scope}, ${expiry}; it is not shown again\n`);
      } catch (err) {
        fail(err instanceof CreateKeyError ? err.message : `create-key failed: ${(err as Error).message}`, 1);
      }
      return;
    }
  }
}

void main();
