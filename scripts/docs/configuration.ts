// docs/configuration.md from the settings tables: the agent's (src/config.ts) and the gateway's
// (gateway/src/config.ts). test/unit/generated-docs.test.ts fails when the file is stale.

import { AGENT_SETTING_TABLES } from '../../src/config.ts';
import { GATEWAY_SETTING_TABLES } from '../../gateway/src/config.ts';
import { defaultText, type Setting, type SettingTable } from '../../src/settings.ts';
import { generatedNotice, table } from './markdown.ts';

function settingsTable(settings: SettingTable): string {
  const rows = Object.values(settings).map((setting: Setting<unknown>) => [
    `\`--${setting.flag} ${setting.arg}\``,
    setting.env === undefined ? '' : `\`${setting.env}\``,
    defaultText(setting),
    setting.meaning,
  ]);
  return table(['Flag', 'Env', 'Default', 'Meaning'], rows);
}

export function configurationDoc(): string {
  return [
    generatedNotice('src/config.ts and gateway/src/config.ts'),
    '',
    '# Configuration',
    '',
    'Every setting of both programs is a flag with an environment variable: a flag wins over its',
    'variable, and an empty variable counts as unset. Write `--flag value` or `--flag=value` (use `=`',
    'for a value starting with `--`). Sizes are bytes: an integer, or one with a `KiB`, `MiB` or `GiB`',
    'suffix (`64MiB`). An invalid value exits with status 2 and one line on stderr naming the flag or',
    'the variable. `--help` prints the same tables.',
    '',
    '## Agent (`browser-telemetry-agent`)',
    '',
    'Programmatic use (`startAgent(options)`): the same settings in camelCase (`keepaliveMs`,',
    '`limits: { maxBodyBytes }`, `otlp: { url }`), with the same checks and defaults, except the data',
    'directory: without `dataDir` the agent keeps events in RAM only.',
    '',
    settingsTable(AGENT_SETTING_TABLES.general),
    '',
    '### Limits',
    '',
    'Truncation and size limits; in code, `limits: { maxBodyBytes, ... }`.',
    '',
    settingsTable(AGENT_SETTING_TABLES.limits),
    '',
    '### OTLP export',
    '',
    'See [export.md](export.md). In code, `otlp: { url, protocol, categories, headers, queueEvents, queueBytes }`.',
    '',
    settingsTable(AGENT_SETTING_TABLES.otlp),
    '',
    '## Gateway (`browser-telemetry-gateway`)',
    '',
    'See [gateway.md](gateway.md).',
    '',
    settingsTable(GATEWAY_SETTING_TABLES.serve),
    '',
    '### `browser-telemetry-gateway create-key`',
    '',
    'Prints a new API key (the bootstrap). `--name`, `--project` and `--days-to-expire` have no variable.',
    '',
    settingsTable(GATEWAY_SETTING_TABLES.createKey),
    '',
  ].join('\n');
}
