// Settings read from flags and environment variables, shared by the agent's config.ts and the
// gateway's: how one kind of value is read from text and checked in code, the argv scanner
// (`--flag value`, `--flag=value`, --help/--version), the flag-over-env rule and --help lines.
// Every bad value becomes one ConfigError line naming the flag or variable.

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
export const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** A bad value; the message lacks the `--flag:` prefix, which the caller adds. */
export class BadValue extends Error {}

// ---------------------------------------------------------------------------------------------
// Value kinds: how one kind of setting is read from text (flags, env) and checked in code.

export interface ValueKind<T> {
  /** Completes "expected ..." in error messages. */
  expected: string;
  /** Secrets (tokens, URLs with passwords) are never echoed back. */
  secret?: boolean;
  /** Parse text from a flag or env var; undefined when it is not a valid value. */
  fromText(text: string): T | undefined;
  /** Check a value passed in code; undefined when it is not a valid value. */
  fromValue(value: unknown): T | undefined;
  /** A value as written on the command line (--help, docs/configuration.md); default String(value). */
  format?(value: T): string;
}

export function integerKind(min: number, max: number, expected: string): ValueKind<number> {
  const inRange = (n: number) => (Number.isSafeInteger(n) && n >= min && n <= max ? n : undefined);
  return {
    expected,
    fromText: (text) => (/^\d+$/.test(text) ? inRange(Number(text)) : undefined),
    fromValue: (value) => (typeof value === 'number' ? inRange(value) : undefined),
  };
}

export function choiceKind<T>(choices: Record<string, T>, expected: string): ValueKind<T> {
  return {
    expected,
    fromText: (text) => (Object.hasOwn(choices, text.toLowerCase()) ? choices[text.toLowerCase()] : undefined),
    fromValue: (value) => (Object.values(choices).includes(value as T) ? (value as T) : undefined),
  };
}

export function stringKind(expected: string, valid: (s: string) => boolean, secret = false): ValueKind<string> {
  const check = (value: unknown) => (typeof value === 'string' && valid(value) ? value : undefined);
  return { expected, secret, fromText: check, fromValue: check };
}

export const hostKind = stringKind('a host name or IP address without spaces', (s) => /^[^\s]+$/.test(s));
export const portKind = integerKind(0, 65535, 'an integer from 0 to 65535');
export const logLevelKind = choiceKind(Object.fromEntries(LOG_LEVELS.map((l) => [l, l])) as Record<string, LogLevel>, `one of ${LOG_LEVELS.join(', ')}`);

/** Error text for a value that failed its kind; secrets are described, never shown. */
export function rejection(kind: ValueKind<unknown>, shown: unknown): string {
  if (kind.secret) return `expected ${kind.expected} (the value is not shown)`;
  return `expected ${kind.expected}, got ${show(shown)}`;
}

export function show(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}

// ---------------------------------------------------------------------------------------------
// Settings and the command line

export interface Setting<T> {
  flag: string;
  /** Absent for flags that have no variable (a subcommand's arguments). */
  env?: string;
  /** Placeholder in --help, e.g. `<port>`. */
  arg: string;
  /** The value when the setting is not given; absent (and no makeDefault): it stays unset. */
  defaultValue?: T;
  /** A default computed per configuration (a random id). */
  makeDefault?: () => T;
  /** --help's words for the default; absent: defaultValue as its kind writes it. */
  default?: string;
  meaning: string;
  kind: ValueKind<T>;
  /** Read by hand (several sources, files, merged JSON): the table functions below skip it. */
  custom?: true;
}

/** The --help and docs/configuration.md text of a setting's default. */
export function defaultText(setting: Setting<unknown>): string {
  if (setting.default !== undefined) return setting.default;
  if (setting.defaultValue === undefined) return 'none';
  // eslint-disable-next-line @typescript-eslint/no-base-to-string -- a kind without format has primitive values
  return setting.kind.format ? setting.kind.format(setting.defaultValue) : String(setting.defaultValue);
}

// ---------------------------------------------------------------------------------------------
// Setting tables: one row per setting, keyed by the option's name in code (`keepaliveMs`). The
// rows that are not custom are read, checked and defaulted by the functions below, and their
// values' types derive from the table, so that a plain flag is one row plus nothing else.

export type SettingTable = Record<string, Setting<unknown>>;

type RowValue<R> = R extends { kind: ValueKind<infer T> } ? T : never;
type PlainKey<S extends SettingTable> = { [K in keyof S]: S[K] extends { custom: true } ? never : K }[keyof S];
type DefaultedKey<S extends SettingTable> = {
  [K in PlainKey<S>]: S[K] extends { defaultValue: unknown } | { makeDefault: unknown } ? K : never;
}[PlainKey<S>];

/** The values of a table's plain rows as given (flags, env or code): every one optional. */
export type GivenValues<S extends SettingTable> = { [K in PlainKey<S>]?: RowValue<S[K]> };

/** The values of a table's plain rows once defaulted: rows with a default are required. */
export type SettingValues<S extends SettingTable> = { [K in DefaultedKey<S>]: RowValue<S[K]> } & {
  [K in Exclude<PlainKey<S>, DefaultedKey<S>>]?: RowValue<S[K]>;
};

function plainRows(table: SettingTable): Array<[string, Setting<unknown>]> {
  return Object.entries(table).filter(([, setting]) => !setting.custom);
}

/** Reads the plain rows from flags and env (errors name the flag or variable). */
export function readSettings<S extends SettingTable>(table: S, reader: SettingReader): GivenValues<S> {
  const values: Record<string, unknown> = {};
  for (const [key, setting] of plainRows(table)) {
    const value = reader.read(setting);
    if (value !== undefined) values[key] = value;
  }
  return values as GivenValues<S>;
}

/** Checks the plain rows' values passed in code (errors name the option, `keepaliveMs`). */
export function checkSettings<S extends SettingTable>(table: S, options: Record<string, unknown>): GivenValues<S> {
  const values: Record<string, unknown> = {};
  for (const [key, setting] of plainRows(table)) {
    const checked = checkValue(key, setting.kind, options[key]);
    if (checked !== undefined) values[key] = checked;
  }
  return values as GivenValues<S>;
}

/** A value passed in code, checked by its kind; undefined when not given. Errors name `label` (the option). */
export function checkValue<T>(label: string, kind: ValueKind<T>, value: unknown): T | undefined {
  if (value === undefined) return undefined;
  const checked = kind.fromValue(value);
  if (checked === undefined) throw new ConfigError(`${label}: ${rejection(kind, value)}`);
  return checked;
}

/** Fills in the plain rows' defaults; a row without one stays absent when not given. */
export function withDefaults<S extends SettingTable>(table: S, given: GivenValues<S>): SettingValues<S> {
  const values: Record<string, unknown> = {};
  for (const [key, setting] of plainRows(table)) {
    const value = (given as Record<string, unknown>)[key] ?? setting.defaultValue ?? setting.makeDefault?.();
    if (value !== undefined) values[key] = value;
  }
  return values as SettingValues<S>;
}

export interface Scanned {
  values: Map<string, string>;
  help: boolean;
  version: boolean;
  /** The first syntax problem; reported only when neither --help nor --version was given. */
  problem?: string;
}

/**
 * Split argv into flag values, --help and --version. Problems (unknown flag, missing value,
 * positional word, flag given twice) are recorded, not thrown, so --help can still win.
 * `subject` names the program in messages about positional words.
 */
export function scanArgv(argv: readonly string[], settings: ReadonlyArray<Setting<unknown>>, subject = 'this program'): Scanned {
  const valueFlags = new Set(settings.map((s) => s.flag));
  const secretFlags = new Set(settings.filter((s) => s.kind.secret).map((s) => s.flag));
  const findSetting = (flag: string) => settings.find((s) => s.flag === flag)!;
  const scanned: Scanned = { values: new Map(), help: false, version: false };
  const fail = (problem: string) => {
    scanned.problem ??= problem;
  };
  let previousSecret: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.indexOf('=');
    const name = arg.startsWith('--') && eq !== -1 ? arg.slice(0, eq) : arg;
    if (name === '--help' || name === '-h' || name === '--version' || name === '-v') {
      previousSecret = undefined;
      if (name !== arg) fail(`${name}: takes no value`);
      else if (name === '--help' || name === '-h') scanned.help = true;
      else scanned.version = true;
      continue;
    }
    if (!arg.startsWith('-') || arg === '-' || arg === '--') {
      // A stray word right after a secret may be the rest of it, split by the shell: never echo it.
      fail(
        previousSecret !== undefined
          ? `unexpected argument after --${previousSecret} (${subject} takes only flags)`
          : `unexpected argument ${show(arg)} (${subject} takes only flags; see --help)`,
      );
      previousSecret = undefined;
      continue;
    }
    const flag = name.slice(2);
    previousSecret = secretFlags.has(flag) ? flag : undefined;
    if (!arg.startsWith('--') || !valueFlags.has(flag)) {
      fail(`unknown flag ${show(name)} (see --help)`);
      continue;
    }
    let value: string;
    if (eq !== -1) {
      value = arg.slice(eq + 1);
    } else {
      const next = argv[i + 1];
      // `--a --b` is a forgotten value, not the value "--b"; values starting with -- need `=`.
      if (next === undefined || next.startsWith('--')) {
        fail(`--${flag}: missing value (expected ${findSetting(flag).kind.expected})`);
        continue;
      }
      value = next;
      i++;
    }
    if (scanned.values.has(flag)) fail(`--${flag}: given more than once`);
    else scanned.values.set(flag, value);
  }
  return scanned;
}

/** Reads settings from scanned flags and env: a flag wins, an empty variable counts as unset. */
export class SettingReader {
  constructor(
    private readonly scanned: Scanned,
    private readonly env: Record<string, string | undefined>,
  ) {}

  /** Text and error label of one setting: the flag if given, else its env var if non-empty. */
  source(setting: Setting<unknown>): { text: string; label: string } | undefined {
    const flagText = this.scanned.values.get(setting.flag);
    if (flagText !== undefined) return { text: flagText, label: `--${setting.flag}` };
    const envText = setting.env === undefined ? undefined : this.env[setting.env];
    // An empty variable counts as unset (`FOO=` in a compose file or a Dockerfile).
    if (envText !== undefined && envText !== '') return { text: envText, label: `${setting.env} (env)` };
    return undefined;
  }

  /** The parsed value; throws ConfigError naming the flag or variable when it is invalid. */
  read<T>(setting: Setting<T>): T | undefined {
    const from = this.source(setting);
    if (!from) return undefined;
    const value = setting.kind.fromText(from.text);
    if (value === undefined) throw new ConfigError(`${from.label}: ${rejection(setting.kind, from.text)}`);
    return value;
  }
}

/** Runs `run`, turning a BadValue into a ConfigError prefixed with `label`. */
export function withLabel<T>(label: string, run: () => T): T {
  try {
    return run();
  } catch (err) {
    if (err instanceof BadValue) throw new ConfigError(label ? `${label}: ${err.message}` : err.message, { cause: err });
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------
// --help

/**
 * A command's --help: `intro` (usage and description), its options (`settings`), then `after`:
 * the lines of the flags without a value (flagHelpLine) and any notes.
 */
export function commandHelpText(intro: readonly string[], settings: ReadonlyArray<Setting<unknown>>, after: readonly string[]): string {
  return [...intro, '', 'Options:', ...optionHelpLines(settings), ...after].join('\n') + '\n';
}

/** The --help line of a flag that takes no value (`-h, --help`), in the columns of optionHelpLines. */
export function flagHelpLine(flags: string, meaning: string): string {
  return `  ${flags}`.padEnd(34) + `  ${meaning}`;
}

/** The lines of --help describing `settings`, one entry each with its env var and default. */
export function optionHelpLines(settings: ReadonlyArray<Setting<unknown>>): string[] {
  const lines: string[] = [];
  for (const setting of settings) {
    const env = setting.env === undefined ? '' : `env ${setting.env}, `;
    lines.push(`  --${setting.flag} ${setting.arg}`.padEnd(34) + `  ${env}default: ${defaultText(setting)}`);
    for (const line of wrap(setting.meaning, 94)) lines.push(`      ${line}`);
  }
  return lines;
}

export function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line ? `${line} ${word}` : word;
    }
  }
  if (line) lines.push(line);
  return lines;
}
