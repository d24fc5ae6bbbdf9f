/**
 * The command's arguments parsed into the API's options (each flag an option; a bad value a
 * usage error, exit code 2); its usage text is cli-usage.ts.
 * @module
 */
import { parseArgs } from 'node:util';
import { CASTING_MODES } from '../../call/check/scalars.js';
import { KERNEL_DTYPES, listed, OUT_DTYPES } from '../../glue/dtypes.js';
import { FORMAT_NAMES, type FormatName } from '../formats/index.js';
import { DATASET_ONLY, FILE_ONLY, FLAGS, flagOf, NUMBER_KEYS, VALUED } from './flags.js';
import { SHARDS_MAX } from '../dataset/args.js';

/** A mistake in the command line: printed with a pointer to --help, exit code 2. */
export class UsageError extends Error {}

export function num(name: string, v: string | undefined, integer = false): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || (integer && !Number.isInteger(n))) {
    throw new UsageError(`--${name} must be ${integer ? 'an integer' : 'a number'}, got ${JSON.stringify(v)}`);
  }
  return n;
}

/** A flag whose value is one of `allowed` (a UsageError otherwise), or undefined when absent. */
function oneOf<T extends string>(name: string, v: string | undefined, allowed: readonly T[]): T | undefined {
  if (v === undefined) return undefined;
  if (!allowed.includes(v as T)) throw new UsageError(`--${name} must be ${listed(allowed, '')}, got ${JSON.stringify(v)}`);
  return v as T;
}

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

/** An API error message as the command's user should read it: flags for options, no function name. */
export function asFlags(msg: string): string {
  const flag: Record<string, string> = { tensors: 'tensor', followSymlinks: 'no-follow-symlinks', durable: 'no-fsync' };
  return msg
    .replace(/^(normalizeFile|normalizeDataset|createPool): /, '')
    .replace(/^inputs\[\d+\]: /, '')
    .replace(/options\.([A-Za-z]+)/g, (_, k: string) => `--${flag[k] ?? flagOf(k)}`);
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

/** --shard I/N as `{ index, count }` (undefined when absent). */
function shardFlag(v: string | undefined): { index: number; count: number } | undefined {
  if (v === undefined) return undefined;
  const m = /^(\d{1,9})\/(\d{1,9})$/.exec(v);
  const index = Number(m?.[1]);
  const count = Number(m?.[2]);
  if (!m || count < 1 || count > SHARDS_MAX || index >= count) {
    throw new UsageError(`--shard must be I/N with 0 <= I < N <= ${SHARDS_MAX} (e.g. 0/4), got ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)}`);
  }
  return { index, count };
}

/** A command line, parsed. */
export interface Command {
  help: boolean;
  version: boolean;
  /** The inputs (one for a one-file run), and the output file or the output directory. */
  inputs: string[];
  output: string | undefined;
  outDir: string | undefined;
  /** The options both runs take (besides signal and progress). */
  common: Record<string, unknown>;
  /** The options of a one-file run, or of a dataset run. */
  file: Record<string, unknown>;
  dataset: Record<string, unknown>;
  quiet: boolean;
  json: boolean;
  verbose: boolean;
  /** How progress is shown (auto settled by whether stderr is a terminal). */
  progress: 'auto' | 'tty' | 'log' | 'none';
  /** Seconds between progress lines in `log` mode. */
  progressInterval: number;
}

/** The ways progress is shown: a live line on a terminal, a line at an interval for logs, none. */
const PROGRESS_MODES: readonly Command['progress'][] = ['auto', 'tty', 'log', 'none'];

/** Parses `argv` (a UsageError for anything wrong in it). */
export function parseCommand(argv: readonly string[]): Command {
  let values: Record<string, string | boolean | string[] | undefined>;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ args: joinNegativeValues(argv), allowPositionals: true, strict: true, options: FLAGS }));
  } catch (e) {
    throw new UsageError(usageError(e as Error & { code?: string }));
  }
  const str = (k: string) => values[k] as string | undefined;
  const cmd: Command = {
    help: values.help === true, version: values.version === true, inputs: [], output: undefined, outDir: str('out-dir'),
    common: {}, file: {}, dataset: {}, quiet: values.quiet === true, json: values.json === true, verbose: values.verbose === true,
    progress: oneOf('progress', values.progress as string | undefined, PROGRESS_MODES) ?? 'auto',
    progressInterval: num('progress-interval', str('progress-interval')) ?? 10,
  };
  if (!(cmd.progressInterval > 0)) throw new UsageError(`--progress-interval must be a number of seconds > 0, got ${JSON.stringify(str('progress-interval'))}`);
  if (cmd.help || cmd.version) return cmd;
  if (positionals[0] !== 'normalize') {
    throw new UsageError(positionals.length === 0 ? 'no command given' : `unknown command ${JSON.stringify(positionals[0])} (the command is normalize)`);
  }
  if (cmd.outDir === undefined && positionals.length !== 3) {
    throw new UsageError(`expected "normalize IN OUT" or "normalize IN... --out-dir DIR", got ${JSON.stringify(positionals.join(' '))}`);
  }
  if (cmd.outDir !== undefined && positionals.length < 2) throw new UsageError('--out-dir needs at least one input');
  for (const f of cmd.outDir === undefined ? DATASET_ONLY : FILE_ONLY) {
    if (values[f] !== undefined) throw new UsageError(cmd.outDir === undefined ? `--${f} needs --out-dir` : `--${f} is for one file, not with --out-dir`);
  }
  cmd.inputs = positionals.slice(1, cmd.outDir === undefined ? 2 : undefined);
  if (cmd.outDir !== undefined && cmd.inputs.includes('-')) throw new UsageError('- (standard input) is for one file, not with --out-dir');
  cmd.output = cmd.outDir === undefined ? positionals[2] : undefined;
  cmd.common = {
    weight: str('weight'),
    weightTensor: str('weight-tensor'),
    dtype: oneOf('dtype', values.dtype as string | undefined, KERNEL_DTYPES),
    outDtype: oneOf('out-dtype', values['out-dtype'] as string | undefined, OUT_DTYPES),
    weightDtype: oneOf('weight-dtype', values['weight-dtype'] as string | undefined, KERNEL_DTYPES),
    castingMode: oneOf('casting-mode', values['casting-mode'] as string | undefined, CASTING_MODES),
    tensors: values.tensor as string[] | undefined,
    ...Object.fromEntries(NUMBER_KEYS.map((k) => [k, num(flagOf(k), str(flagOf(k)))])),
    dim: num('dim', str('dim'), true),
    threads: num('threads', str('threads'), true),
    format: oneOf<FormatName>('format', values.format as string | undefined, FORMAT_NAMES),
    durable: values['no-fsync'] !== true,
  };
  cmd.file = { rstd: str('rstd'), inPlace: values['in-place'] === true };
  cmd.dataset = {
    shard: shardFlag(str('shard')),
    force: values.force === true,
    keepGoing: values['keep-going'] === true,
    checksum: values.checksum === true,
    followSymlinks: values['no-follow-symlinks'] !== true,
    lockWait: num('lock-wait', str('lock-wait')),
    lockStale: num('lock-stale', str('lock-stale')),
  };
  return cmd;
}
