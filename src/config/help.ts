// --help: the intro, then one line per setting of the table.

import { commandHelpText, flagHelpLine } from '../settings.ts';
import { ALL_SETTINGS } from './settings-table.ts';

export function helpText(): string {
  const intro = [
    'Usage: browser-telemetry-agent [options]',
    '',
    'Sidecar that follows every Chromium target over CDP and serves typed telemetry as SSE.',
    'Every option can also be set by its environment variable; a flag wins over its variable,',
    'and an empty variable counts as unset. Write --flag value or --flag=value (use = for a',
    'value starting with --). Sizes are bytes: an integer, or with a KiB, MiB or GiB suffix (64MiB).',
  ];
  return commandHelpText(intro, ALL_SETTINGS, [
    flagHelpLine('-h, --help', 'Print this help and exit.'),
    flagHelpLine('-v, --version', 'Print the version and exit.'),
    '',
    'browser-telemetry-agent mcp --url URL: an MCP server on stdio relaying to an agent or a',
    'gateway (mcp --help; docs/mcp.md).',
    '',
    'Invalid values exit with status 2 and one line on stderr.',
  ]);
}
