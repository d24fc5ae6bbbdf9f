/**
 * The command's words: its usage text, and its arguments parsed into the API's options (each
 * flag an option; a bad value a usage error, exit code 2).
 * @module
 */
import { parseArgs } from 'node:util';
import type { CastingMode } from '../types.js';
import { KERNEL_DTYPES, listed, OUT_DTYPES, QUANT_DTYPES } from '../dtypes.js';
import { FORMAT_NAMES, FORMATS, type FormatName } from './formats/index.js';

/**
 * The flags of the scalar parameters (types.ts's `ScalarOptions`), by option name, each with its
 * lines of --help: `--NAME` (a camelCase name in kebab case: `fooBar` is `--foo-bar`), read as a
 * number into the option and passed on with the others, so a new scalar parameter reaches the
 * command with one entry here.
 */
const SCALAR_FLAGS: Readonly<Record<string, string>> = {
  eps: '  --eps E             added inside the square root (default 1e-6)',
  offset: '  --offset O          add O to the weight: the gain is O + weight (Gemma: 1; default 0)',
  partial: '  --partial P         pRMSNorm: rms from the first ceil(P * dim) elements, 0 < P <= 1\n                      (default 1)',
};

/** The quantized output types, as the help lists them. */
const QUANT = Object.values(QUANT_DTYPES);

export const USAGE = `Usage: rmsnorm-wasm normalize IN OUT [options]
       rmsnorm-wasm normalize IN... --out-dir DIR [options]

Normalizes every row of IN with RMSNorm on worker threads, writing OUT in the same format and
(unless --out-dtype) dtype; the math is float32. IN's format is told by its content: a NumPy
.npy (float32, float16, or float64 read as float32; C order, the last axis is the row), an
.npz (each float array; other members copied) or a safetensors file (each float tensor, or
those --tensor names; others copied). Raw little-endian data needs --format raw and --dim.
OUT appears only when complete (a link is followed and its target replaced); IN is never
modified. IN - reads standard input, OUT - writes standard output; a pipe, FIFO or device is
read or written as a stream (.npy and raw), not atomically.

With --out-dir, every IN — files, directories (their .npy, .npz and .safetensors files, or
every file with --format raw, recursively, following links) and quoted glob patterns
('data/**/*.npy') — is written to DIR at the same relative path, on one pool. DIR/manifest.jsonl
gets a JSON line per output once it is complete; a rerun skips outputs recorded there (same
input, same options, output unchanged) and redoes the rest, so a killed run is resumed by
running it again. One run per shard at a time: a second waits for the first (see --lock-wait).

Options:
  --dtype T           ${listed(KERNEL_DTYPES, '')}: what raw IN holds (default float32);
                      for a file with a header optional, and checked against it
  --out-dtype T       OUT's dtype, ${listed(OUT_DTYPES, '')} (default:
                      IN's; float32 for float64); a .npy or .npz cannot hold bfloat16
                      or float8.
                      ${QUANT.map((d) => d.name).join(' and ')} quantize each row by its own scale,
                      ${QUANT.map((d) => `max|y|/${d.qmax}`).join(' or ')} (float32), written beside it: the array
                      NAME_scale in an .npz or safetensors OUT, the file OUT.scale.npy beside
                      a .npy (raw: OUT.scale + OUT's extension), renamed into place before
                      OUT, which is removed first
  --quant-scale S     with --out-dtype ${listed(QUANT.map((d) => d.name), '')}: one scale for every row
                      (q = y / S); no scales are written
  --tensor NAME       in an .npz or safetensors IN: normalize this array (repeat for more;
                      default: every float array)
  --weight W          the gain, dim elements: a .npy, an .npz or safetensors file holding
                      it (see --weight-tensor), or a raw file (default: none)
  --weight-tensor N   the weight's array in an .npz or safetensors W of several
  --weight-dtype T    what a raw W holds (default float32); for a file with a header
                      optional, and checked against it
  --casting-mode M    none, llama or gemma: where half results are rounded (default none)
${Object.values(SCALAR_FLAGS).join('\n')}
  --dim D             row length (raw input; default: the weight's length)
  --threads N         worker threads (default: one per core)
  --rstd FILE         also write each row's rstd (same format as IN; float32)
  --format F          ${listed(FORMAT_NAMES, '')} (default: told by the content; ${listed(FORMATS.filter((f) => !f.header).map((f) => f.name), '')}
                      only when given)
  --in-place          allow OUT to be IN (still through a temporary file)
  --no-fsync          rename outputs into place without flushing them to the device:
                      faster for many small files; a killed run still leaves no partial
                      output, but a power failure may
  --out-dir DIR       many inputs: write each output under DIR (see above)
  --shard I/N         with --out-dir: process only shard I (0 to N-1) of N; N processes
                      given the same inputs cover them exactly once (their manifests:
                      DIR/manifest.shard-I-of-N.jsonl); a file over 64 MiB and over
                      1/N of the data is split by rows into NAME.part-K-of-P files
  --force             with --out-dir: redo outputs already recorded as done
  --keep-going        with --out-dir: after a failed file go on with the others; list the
                      failures at the end (exit code 1)
  --checksum          with --out-dir: record each output's SHA-256 in the manifest
  --no-follow-symlinks  with --out-dir: skip symbolic links in directories (each with a
                      warning) instead of following them
  --lock-wait S       with --out-dir: while another live run writes this shard, wait at most
                      S seconds, then exit with code 75 (default: wait until it ends)
  --lock-stale S      with --out-dir: take over a lock from another machine whose heartbeat
                      stopped S seconds ago (default 60)
  --verbose           with --out-dir: a line per file on stderr
  --progress M        auto, tty, log or none: a live line on a terminal (tty); a line every
                      --progress-interval seconds, for logs (log: files, bytes, percent,
                      rate, ETA); auto (default): tty on a terminal, else log
  --progress-interval S  seconds between log lines (default 10)
  --quiet             print nothing but errors (--progress none)
  --json              print the summary as JSON
  --help, --version

Exit codes: 0 done; 1 a bad file or a failed run (the message names the file); 2 bad usage
or a bad option value, found before anything is read or made; 75 another run holds the
shard (with --lock-wait); 130, 143 or 129 stopped by SIGINT, SIGTERM or SIGHUP: temporary
files are removed, and with --out-dir the outputs completed so far are kept and recorded
(run the same command again to resume).`;

/** The flag of scalar option `key` (see {@link SCALAR_FLAGS}). */
const flagOf = (key: string): string => key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

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


const CASTING_MODES: readonly CastingMode[] = ['none', 'llama', 'gemma'];

/** A flag whose value is one of `allowed` (a UsageError otherwise), or undefined when absent. */
function oneOf<T extends string>(name: string, v: string | undefined, allowed: readonly T[]): T | undefined {
  if (v === undefined) return undefined;
  if (!allowed.includes(v as T)) throw new UsageError(`--${name} must be ${listed(allowed, '')}, got ${JSON.stringify(v)}`);
  return v as T;
}

/** The flags that take a value (a value may start with '-': `--eps -1e-3`, `--offset -1`). */
const VALUED = [
  'dtype', 'out-dtype', 'quant-scale', 'weight-dtype', 'weight-tensor', 'tensor', 'casting-mode', 'weight', ...Object.keys(SCALAR_FLAGS).map(flagOf), 'dim', 'threads', 'rstd', 'format',
  'out-dir', 'shard', 'lock-wait', 'lock-stale', 'progress', 'progress-interval',
];

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
    .replace(/options\.([A-Za-z]+)/g, (_, k: string) => `--${flag[k] ?? k.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase())}`);
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
  const m = /^(\d+)\/(\d+)$/.exec(v);
  const index = Number(m?.[1]);
  const count = Number(m?.[2]);
  if (!m || count < 1 || index >= count) throw new UsageError(`--shard must be I/N with 0 <= I < N (e.g. 0/4), got ${JSON.stringify(v)}`);
  return { index, count };
}


/** The flags parseArgs reads. */
const FLAGS = {
  dtype: { type: 'string' },
  'out-dtype': { type: 'string' },
  'quant-scale': { type: 'string' },
  'weight-dtype': { type: 'string' },
  'weight-tensor': { type: 'string' },
  tensor: { type: 'string', multiple: true },
  'casting-mode': { type: 'string' },
  weight: { type: 'string' },
  ...Object.fromEntries(Object.keys(SCALAR_FLAGS).map((k) => [flagOf(k), { type: 'string' }])),
  dim: { type: 'string' },
  threads: { type: 'string' },
  rstd: { type: 'string' },
  format: { type: 'string' },
  'in-place': { type: 'boolean' },
  'out-dir': { type: 'string' },
  shard: { type: 'string' },
  force: { type: 'boolean' },
  'keep-going': { type: 'boolean' },
  checksum: { type: 'boolean' },
  'no-follow-symlinks': { type: 'boolean' },
  'lock-wait': { type: 'string' },
  'lock-stale': { type: 'string' },
  verbose: { type: 'boolean' },
  progress: { type: 'string' },
  'progress-interval': { type: 'string' },
  'no-fsync': { type: 'boolean' },
  quiet: { type: 'boolean' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
} as const;

/** Flags of a dataset run only, and of a one-file run only. */
const DATASET_ONLY = ['shard', 'force', 'keep-going', 'checksum', 'verbose', 'no-follow-symlinks', 'lock-wait', 'lock-stale'];
const FILE_ONLY = ['rstd', 'in-place'];

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
    quantScale: num('quant-scale', str('quant-scale')),
    weightDtype: oneOf('weight-dtype', values['weight-dtype'] as string | undefined, KERNEL_DTYPES),
    castingMode: oneOf('casting-mode', values['casting-mode'] as string | undefined, CASTING_MODES),
    tensors: values.tensor as string[] | undefined,
    ...Object.fromEntries(Object.keys(SCALAR_FLAGS).map((k) => [k, num(flagOf(k), str(flagOf(k)))])),
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
