// The agent CLI with one of its CDP cuts changed (src/telemetry/cdp-cuts.ts), for the page-load
// section's cut arms: the same process as the (c) arm's CLI (src/main.ts), the change given in
// code (`AgentRuntime.cdpCuts`), since a cut is not a setting. It prints the lines of the CLI's
// banner that AgentCli reads.
//
// argv[2]: JSON of Partial<CdpCuts>; the rest: the agent's flags.

import { startAgentWithConfig } from '../../src/agent.ts';
import { parseCommandLine } from '../../src/config.ts';
import { closeOnSignals } from '../../src/shutdown.ts';
import type { CdpCuts } from '../../src/telemetry/cdp-cuts.ts';

const cdpCuts = JSON.parse(process.argv[2] ?? '{}') as Partial<CdpCuts>;
const command = parseCommandLine(process.argv.slice(3), process.env);
if (command.kind !== 'run') throw new Error('agent-cuts-cli: expected flags to run the agent with');
const agent = await startAgentWithConfig(command.config, { cdpCuts });
process.stderr.write(`listening on ${agent.url}\n  session id: ${agent.sessionId}\n`);
closeOnSignals('bench agent (CDP cut changed)', () => agent.close());
