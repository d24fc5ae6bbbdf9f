/**
 * The command's flags, each once: the option (or the command's own setting) it sets, how its
 * value is read, which runs take it, and its line of `--help`. Parsing (args.ts), the flags
 * `node:util` parseArgs reads, the refusal of a flag a run does not take, and `--help`
 * (usage.ts) all go by this table; a flag's value is checked by the option's own rule (the API's
 * checks), so a bad value is refused with the same words there and here. The scalar options'
 * flags come from their table (check/scalar-options.ts).
 * @module
 */
import { SCALARS } from '../../call/check/scalar-options.js';
import { CASTING_MODES } from '../../call/check/scalars.js';
import { KERNEL_DTYPES, listed, OUT_DTYPES, QUANT_DTYPES } from '../../glue/dtypes.js';
import { FORMAT_NAMES, FORMATS } from '../formats/index.js';
import { SHARDS_MAX } from '../dataset/args.js';
import { datasetProgressLine, logLine } from './text.js';

/** Joins words that stay on one line of `--help`. */
export const NBSP = '\u00a0';

/** The ways progress is shown: a live line on a terminal, a line at an interval for logs, none (auto: settled by whether stderr is a terminal). */
const PROGRESS_MODES = ['auto', 'tty', 'log', 'none'] as const;
export type ProgressMode = (typeof PROGRESS_MODES)[number];

/** A mistake in the command line: printed with a pointer to --help, exit code 2. */
export class UsageError extends Error {}

/** How a flag's value is read: a switch, a string, a repeated string, a number, an integer, one of some words, or its own parser. */
type Value =
  | { readonly t: 'switch'; readonly sets?: boolean }
  | { readonly t: 'string' }
  | { readonly t: 'strings' }
  | { readonly t: 'number' }
  | { readonly t: 'integer' }
  | { readonly t: 'choice'; readonly of: readonly string[] }
  | { readonly t: 'parse'; readonly parse: (flag: string, v: string) => unknown };

/** One flag (see the module doc). */
export interface Flag {
  /** The option it sets (`options.KEY` of the API), or the command's own setting (`setting`). */
  readonly key: string;
  /** An option of both runs, of one file alone, of a dataset alone; or a setting of the command. */
  readonly runs: 'both' | 'file' | 'dataset';
  /** A setting of the command itself (how it prints, which run it is), not an option of the API. */
  readonly setting?: boolean;
  readonly value: Value;
  /** The letter (or word) its value is shown by in `--help` (none for a switch). */
  readonly letter?: string;
  /** Its help (wrapped by usage.ts); a dataset's flag is said to be for --out-dir. */
  readonly help: string;
  /** A line shown as it is under the help (an example of what it prints), made when `--help` asks. */
  readonly example?: () => string;
  /** Its one-letter form (`-h`). */
  readonly short?: string;
}

const sw = (sets = true): Value => ({ t: 'switch', sets });
const choice = (of: readonly string[]): Value => ({ t: 'choice', of });
const NUMBER: Value = { t: 'number' };

/** `--shard I/N` as `{ index, count }`. */
function shardOf(flag: string, v: string): { index: number; count: number } {
  const m = /^(\d{1,9})\/(\d{1,9})$/.exec(v);
  const index = Number(m?.[1]);
  const count = Number(m?.[2]);
  if (!m || count < 1 || count > SHARDS_MAX || index >= count) {
    throw new UsageError(`--${flag} must be I/N with 0 <= I < N <= ${SHARDS_MAX} (e.g. 0/4), got ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)}`);
  }
  return { index, count };
}

/** Seconds > 0. */
function seconds(flag: string, v: string): number {
  const n = Number(v);
  if (v.trim() === '' || !(n > 0) || !Number.isFinite(n)) throw new UsageError(`--${flag} must be a number of seconds > 0, got ${JSON.stringify(v)}`);
  return n;
}

/** The quantized output types, as the help names them. */
const QUANT = Object.values(QUANT_DTYPES);
/** A default as the help shows it: 1e-6, not 0.000001. */
const shown = (v: number) => (v !== 0 && Math.abs(v) < 1e-3 ? v.toExponential() : String(v));
/** The flag of option `key`: its camelCase name in kebab case (`fooBar` is `foo-bar`). */
export const flagOf = (key: string): string => key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/** The scalar options' flags, from their table: `--NAME V`. */
const SCALAR_FLAGS = Object.fromEntries(
  Object.entries(SCALARS).map(([k, s]) => [flagOf(k), { key: k, runs: 'both', value: NUMBER, letter: s.flag.letter, help: `${s.flag.help} (default${NBSP}${shown(s.fallback)})` } satisfies Flag]),
);

/** Every flag, in the order of `--help`. */
export const FLAGS: Readonly<Record<string, Flag>> = {
  dtype: { key: 'dtype', runs: 'both', value: choice(KERNEL_DTYPES), letter: 'T', help: `${listed(KERNEL_DTYPES, '')}: what raw IN holds (default float32); for a file with a header optional, and checked against it` },
  'out-dtype': {
    key: 'outDtype', runs: 'both', value: choice(OUT_DTYPES), letter: 'T',
    help:
      `OUT's dtype, ${listed(OUT_DTYPES, '')} (default: IN's; float32 for float64); a .npy or .npz cannot hold bfloat16 or float8. ` +
      `${QUANT.map((d) => d.name).join(' and ')} quantize each row by its own scale, ${QUANT.map((d) => `max|y|/${d.qmax}`).join(' or ')} (float32), written beside it: the array ` +
      'NAME_scale in an .npz or safetensors OUT, the file OUT.scale.npy beside a .npy (raw: OUT.scale + OUT\'s extension), renamed into place before OUT, which is removed first',
  },
  'quant-scale': { key: 'quantScale', runs: 'both', value: NUMBER, letter: 'S', help: `with --out-dtype ${listed(Object.keys(QUANT_DTYPES), '')}: one scale for every row (q${NBSP}=${NBSP}y${NBSP}/${NBSP}S); no scales are written` },
  tensor: { key: 'tensors', runs: 'both', value: { t: 'strings' }, letter: 'NAME', help: 'in an .npz or safetensors IN: normalize this array (repeat for more; default: every float array)' },
  weight: { key: 'weight', runs: 'both', value: { t: 'string' }, letter: 'W', help: 'the gain, dim elements: a .npy, an .npz or safetensors file holding it (see --weight-tensor), or a raw file (default: none)' },
  'weight-tensor': { key: 'weightTensor', runs: 'both', value: { t: 'string' }, letter: 'N', help: 'the weight\'s array in an .npz or safetensors W of several' },
  'weight-dtype': { key: 'weightDtype', runs: 'both', value: choice(KERNEL_DTYPES), letter: 'T', help: 'what a raw W holds (default float32); for a file with a header optional, and checked against it' },
  'casting-mode': { key: 'castingMode', runs: 'both', value: choice(CASTING_MODES), letter: 'M', help: `${listed(CASTING_MODES, '')}: where half results are rounded (default none)` },
  ...SCALAR_FLAGS,
  dim: { key: 'dim', runs: 'both', value: { t: 'integer' }, letter: 'D', help: 'row length (raw input; default: the weight\'s length)' },
  threads: { key: 'threads', runs: 'both', value: { t: 'integer' }, letter: 'N', help: 'worker threads (default: one per core)' },
  rstd: { key: 'rstd', runs: 'file', value: { t: 'string' }, letter: 'FILE', help: 'also write each row\'s rstd (same format as IN; float32)' },
  format: {
    key: 'format', runs: 'both', value: choice(FORMAT_NAMES), letter: 'F',
    help: `${listed(FORMAT_NAMES, '')} (default: told by the content; ${listed(FORMATS.filter((f) => !f.header).map((f) => f.name), '')} only when given)`,
  },
  'in-place': { key: 'inPlace', runs: 'file', value: sw(), help: 'allow OUT to be IN (still through a temporary file)' },
  'no-fsync': { key: 'durable', runs: 'both', value: sw(false), help: 'rename outputs into place without flushing them to the device: faster for many small files; a killed run still leaves no partial output, but a power failure may' },
  'out-dir': { key: 'outDir', runs: 'dataset', setting: true, value: { t: 'string' }, letter: 'DIR', help: 'many inputs: write each output under DIR (see above)' },
  shard: {
    key: 'shard', runs: 'dataset', value: { t: 'parse', parse: shardOf }, letter: 'I/N',
    help: `process only shard I (0 to N-1) of N (at most ${SHARDS_MAX}); N processes given the same inputs cover them exactly once (their manifests: DIR/manifest.shard-I-of-N.jsonl); a file over 64${NBSP}MiB and over 1/N of the data is split by rows into NAME.part-K-of-P files`,
  },
  force: { key: 'force', runs: 'dataset', value: sw(), help: 'redo outputs already recorded as done' },
  'keep-going': { key: 'keepGoing', runs: 'dataset', value: sw(), help: 'after a failed file go on with the others; list the failures at the end (exit code 1)' },
  checksum: { key: 'checksum', runs: 'dataset', value: sw(), help: 'record each output\'s SHA-256 in the manifest' },
  'no-follow-symlinks': { key: 'followSymlinks', runs: 'dataset', value: sw(false), help: 'skip symbolic links in directories (each with a warning) instead of following them' },
  'lock-wait': { key: 'lockWait', runs: 'dataset', value: NUMBER, letter: 'S', help: 'while another live run writes this shard, wait at most S seconds, then exit with code 75 (default: wait until it ends)' },
  'lock-stale': { key: 'lockStale', runs: 'dataset', value: NUMBER, letter: 'S', help: 'take over a lock from another machine whose heartbeat stopped S seconds ago (default 60)' },
  verbose: { key: 'verbose', runs: 'dataset', setting: true, value: sw(), help: 'a line per file on stderr' },
  progress: {
    key: 'progress', runs: 'both', setting: true, value: choice(PROGRESS_MODES), letter: 'M',
    help:
      `${listed(PROGRESS_MODES, '')}: auto (the default) is tty on a terminal, else log; tty a live line (without a terminal: log, with a warning); ` +
      'log a line every --progress-interval seconds, for logs, such as (a dataset\'s; the files in flight counted)',
    example: () => logLine(datasetProgressLine({ files: 12, totalFiles: 60, bytes: 1.234e9, totalBytes: 4.56e9, rows: 301_250, seconds: 20 }), 20),
  },
  'progress-interval': { key: 'progressInterval', runs: 'both', setting: true, value: { t: 'parse', parse: seconds }, letter: 'S', help: 'seconds between log lines (default 10)' },
  quiet: { key: 'quiet', runs: 'both', setting: true, value: sw(), help: 'print nothing but errors (--progress none)' },
  json: { key: 'json', runs: 'both', setting: true, value: sw(), help: 'print the summary as JSON' },
  help: { key: 'help', runs: 'both', setting: true, value: sw(), short: 'h', help: 'print this help' },
  version: { key: 'version', runs: 'both', setting: true, value: sw(), short: 'v', help: 'print the version' },
};

/** The flags as parseArgs reads them. */
export const PARSE_OPTIONS = Object.fromEntries(
  Object.entries(FLAGS).map(([name, f]) => [
    name,
    { type: f.value.t === 'switch' ? 'boolean' : 'string', ...(f.value.t === 'strings' && { multiple: true }), ...(f.short && { short: f.short }) },
  ]),
) as Record<string, { type: 'boolean' | 'string'; multiple?: boolean; short?: string }>;

/** The flags that take a value (a value may start with '-': `--eps -1e-3`, `--offset -1`). */
export const VALUED: readonly string[] = Object.entries(FLAGS).filter(([, f]) => f.value.t !== 'switch').map(([k]) => k);

/** The value of flag `name` as given (`v`: parseArgs' string, strings or boolean), read as its table entry says; undefined when absent. */
export function valueOf(name: string, v: string | boolean | string[] | undefined): unknown {
  const f = FLAGS[name]!.value;
  if (v === undefined) return f.t === 'switch' ? !f.sets : undefined;
  switch (f.t) {
    case 'switch':
      return f.sets;
    case 'string':
    case 'strings':
      return v;
    case 'number':
    case 'integer': {
      const s = v as string;
      const n = Number(s);
      if (s.trim() === '' || !Number.isFinite(n) || (f.t === 'integer' && !Number.isInteger(n))) throw new UsageError(`--${name} must be ${f.t === 'integer' ? 'an integer' : 'a number'}, got ${JSON.stringify(s)}`);
      return n;
    }
    case 'choice':
      if (!f.of.includes(v as string)) throw new UsageError(`--${name} must be ${listed(f.of, '')}, got ${JSON.stringify(v)}`);
      return v;
    case 'parse':
      return f.parse(name, v as string);
  }
}
