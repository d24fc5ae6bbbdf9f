/**
 * The command's arguments parsed into the API's options, flag by flag as the table says
 * (flags.ts); a flag a run does not take, or a value that cannot be read, is a usage error
 * (exit code 2). The values are checked by the API's own rules afterwards (main.ts).
 * @module
 */
import { parseArgs } from 'node:util';
import { FLAGS, flagOf, PARSE_OPTIONS, UsageError, valueOf, VALUED, type ProgressMode } from './flags.js';

export { UsageError } from './flags.js';

/**
 * `argv` with `--flag -value` written `--flag=-value` for the flags that take a value, so that
 * a negative number is read as the value (parseArgs would take it for an option).
 */
function joinNegativeValues(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const next = argv[i + 1];
    if (a.startsWith('--') && VALUED.includes(a.slice(2)) && next !== undefined && /^-(\d|\.\d|inf|nan)/i.test(next)) {
      out.push(`${a}=${next}`);
      i++;
    } else out.push(a);
  }
  return out;
}

/** The flag of each option key whose flag is not its name in kebab case. */
const FLAG_OF_KEY: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(FLAGS).filter(([name, f]) => name !== flagOf(f.key)).map(([name, f]) => [f.key, name]),
);

/** An API error message as the command's user should read it: flags for options, no function name. */
export function asFlags(msg: string): string {
  return msg
    .replace(/^(normalizeFile|normalizeDataset|createPool): /, '')
    .replace(/^inputs\[\d+\]: /, '')
    .replace(/options\.([A-Za-z]+)/g, (_, k: string) => `--${FLAG_OF_KEY[k] ?? flagOf(k)}`);
}

export const SEE_HELP = '(see rmsnorm-wasm --help)';

/** parseArgs' errors in the command's words: the flag and what is wrong, one line. */
function usageError(e: Error & { code?: string }): string {
  const flag = /'(-[^' ]+)/.exec(e.message)?.[1] ?? '';
  if (e.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return `unknown option ${flag}`;
  if (e.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    return /does not take an argument/.test(e.message) ? `${flag} takes no value` : `${flag} needs a value`;
  }
  return e.message;
}

/** A command line, parsed. */
export interface Command {
  help: boolean;
  version: boolean;
  /** The inputs (one for a one-file run), and the output file or the output directory. */
  inputs: string[];
  output: string | undefined;
  outDir: string | undefined;
  /** The options of the run, by the API's names (each flag's as the table reads it). */
  options: Record<string, unknown>;
  quiet: boolean;
  json: boolean;
  verbose: boolean;
  /** How progress is shown (auto settled by whether stderr is a terminal). */
  progress: ProgressMode;
  /** Seconds between progress lines in `log` mode. */
  progressInterval: number;
}

/** Parses `argv` (a UsageError for anything wrong in it). */
export function parseCommand(argv: readonly string[]): Command {
  let values: Record<string, string | boolean | string[] | undefined>;
  let positionals: string[];
  try {
    const parsed = parseArgs({ args: joinNegativeValues(argv), allowPositionals: true, strict: true, options: PARSE_OPTIONS });
    values = parsed.values as typeof values;
    positionals = parsed.positionals;
  } catch (e) {
    throw new UsageError(usageError(e as Error & { code?: string }));
  }
  const settings: Record<string, unknown> = {};
  for (const [name, f] of Object.entries(FLAGS)) if (f.setting) settings[f.key] = valueOf(name, values[name]);
  const cmd: Command = {
    help: settings.help === true, version: settings.version === true, inputs: [], output: undefined, outDir: settings.outDir as string | undefined,
    options: {}, quiet: settings.quiet === true, json: settings.json === true, verbose: settings.verbose === true,
    progress: (settings.progress as ProgressMode | undefined) ?? 'auto', progressInterval: (settings.progressInterval as number | undefined) ?? 10,
  };
  if (cmd.help || cmd.version) return cmd;
  if (positionals[0] !== 'normalize') {
    throw new UsageError(positionals.length === 0 ? 'no command given' : `unknown command ${JSON.stringify(positionals[0])} (the command is normalize)`);
  }
  const dataset = cmd.outDir !== undefined;
  if (!dataset && positionals.length !== 3) {
    throw new UsageError(`expected "normalize IN OUT" or "normalize IN... --out-dir DIR", got ${JSON.stringify(positionals.join(' '))}`);
  }
  if (dataset && positionals.length < 2) throw new UsageError('--out-dir needs at least one input');
  for (const [name, f] of Object.entries(FLAGS)) {
    if (values[name] === undefined || f.runs === 'both' || f.runs === (dataset ? 'dataset' : 'file')) continue;
    throw new UsageError(dataset ? `--${name} is for one file, not with --out-dir` : `--${name} needs --out-dir`);
  }
  cmd.inputs = positionals.slice(1, dataset ? undefined : 2);
  if (dataset && cmd.inputs.includes('-')) throw new UsageError('- (standard input) is for one file, not with --out-dir');
  cmd.output = dataset ? undefined : positionals[2];
  for (const [name, f] of Object.entries(FLAGS)) {
    if (!f.setting && (f.runs === 'both' || f.runs === (dataset ? 'dataset' : 'file'))) cmd.options[f.key] = valueOf(name, values[name]);
  }
  return cmd;
}
