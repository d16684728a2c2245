#!/usr/bin/env node
// CLI: parse flags/env, start the agent, print how to watch the stream, stop on SIGTERM/SIGINT.

import { startAgentWithConfig, type Agent } from './agent.ts';
import { closeOnSignals } from './shutdown.ts';
import { VERSION } from './version.ts';
import { ConfigError, parseCommandLine, type Config } from './config.ts';

function version(): string {
  return VERSION;
}

function banner(agent: Agent, config: Config): string {
  const lines = [
    `browser-telemetry-agent ${version()} listening on ${agent.url}`,
    `  mode:       ${config.cdpUrl === undefined ? 'embedded (headless Chromium launched by the agent)' : `attached to ${config.cdpUrl}`}`,
    `  session id: ${agent.sessionId}`,
  ];
  if (config.tokenGenerated) {
    const token = config.tokens[0]!.token;
    lines.push(`  token:      ${token}`);
    lines.push('', 'Watch the stream:', `  curl -N -H 'Authorization: Bearer ${token}' ${agent.url}/browsers/${agent.sessionId}/telemetry`);
  } else {
    lines.push('', 'Watch the stream:', `  curl -N -H "Authorization: Bearer $AGENT_TOKEN" ${agent.url}/browsers/${agent.sessionId}/telemetry`);
  }
  return lines.join('\n') + '\n';
}

/** `browser-telemetry-agent mcp --url …`: the stdio MCP relay (docs/mcp.md "Desktop clients"); the SDK loads only here. */
async function mcpRelay(argv: string[]): Promise<void> {
  const relay = await import('./mcp/stdio-relay.ts');
  let options: ReturnType<typeof relay.parseRelayArgs>;
  try {
    options = relay.parseRelayArgs(argv, process.env);
  } catch (err) {
    if (!(err instanceof relay.RelayUsageError)) throw err;
    process.stderr.write(`browser-telemetry-agent mcp: ${err.message}\n`);
    process.exit(2);
  }
  if (options === 'help') {
    process.stdout.write(relay.MCP_HELP);
    return;
  }
  // stdout carries the protocol: every line of our own goes to stderr.
  await relay.runRelay(options, (line) => process.stderr.write(`browser-telemetry-agent mcp: ${line}\n`));
  // stdin ended: the client is gone. Pooled sockets to the remote must not keep the process up.
  process.exit(0);
}

async function main(): Promise<void> {
  if (process.argv[2] === 'mcp') return mcpRelay(process.argv.slice(3));
  let config: Config;
  try {
    const command = parseCommandLine(process.argv.slice(2), process.env);
    if (command.kind === 'help') {
      process.stdout.write(command.text);
      return;
    }
    if (command.kind === 'version') {
      process.stdout.write(`${version()}\n`);
      return;
    }
    config = command.config;
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`browser-telemetry-agent: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }

  let agent: Agent;
  try {
    agent = await startAgentWithConfig(config);
  } catch (err) {
    process.stderr.write(`browser-telemetry-agent: could not start: ${(err as Error).message}\n`);
    process.exit(1);
  }
  // The human-readable banner goes to stderr; stdout carries only JSON log lines.
  process.stderr.write(banner(agent, config));

  closeOnSignals('browser-telemetry-agent', () => agent.close());
}

void main();
