/**
 * The `rmsnorm-wasm` command (bin.ts runs it): `rmsnorm-wasm normalize IN OUT [options]` (see {@link USAGE}),
 * a thin shell over {@link normalizeFile}: argument parsing, a progress line on a terminal,
 * the summary, exit codes, and Ctrl-C. Exit codes: 0 done, 1 a bad file or failed run, 2 bad
 * usage, 130 interrupted (SIGINT; the temporary output is removed).
 * @module
 */
import { readFileSync } from 'node:fs';
import { clearLine, cursorTo } from 'node:readline';
import { parseArgs } from 'node:util';
import { DTYPE_NAMES } from '../check/arrays.js';
import type { CastingMode, Dtype } from '../types.js';
import { normalizeFile, type NormalizeProgress, type NormalizeSummary } from './file.js';

const USAGE = `Usage: rmsnorm-wasm normalize IN OUT [options]

Normalizes every row of IN (NumPy .npy float32 or float16, C order, the last axis is the
row; or raw little-endian float32, float16 or bfloat16 with --dim and --dtype) with RMSNorm on
worker threads, writing OUT in the same format and dtype (the math is float32). OUT appears
only when complete; IN is never modified.

Options:
  --dtype T           float32, float16 or bfloat16: what a raw IN holds (default
                      float32); for a .npy optional, and checked against its header
  --weight W          the gain: a .npy (float32 or float16) or raw file of dim elements
                      (default: none)
  --weight-dtype T    what a raw W holds (default float32); for a .npy optional, and
                      checked against its header
  --casting-mode M    none, llama or gemma: where half results are rounded (default none)
  --eps E             added inside the square root (default 1e-6)
  --dim D             row length (raw input; default: the weight's length)
  --threads N         worker threads (default: one per core)
  --offset O          add O to the weight: the gain is O + weight (Gemma: 1; default 0)
  --partial P         pRMSNorm: rms from the first ceil(P * dim) elements, 0 < P <= 1
                      (default 1)
  --rstd FILE         also write each row's rstd (same format as IN; float32)
  --format F          npy or raw (default: npy for a .npy name, else raw)
  --in-place          allow OUT to be IN (still through a temporary file)
  --quiet             print nothing but errors
  --json              print the summary as JSON
  --help, --version`;

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

class UsageError extends Error {}

function num(name: string, v: string | undefined, integer = false): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || (integer && !Number.isInteger(n))) {
    throw new UsageError(`--${name} must be ${integer ? 'an integer' : 'a number'}, got ${JSON.stringify(v)}`);
  }
  return n;
}


const CASTING_MODES: readonly CastingMode[] = ['none', 'llama', 'gemma'];

/** A flag whose value is one of `allowed` (a UsageError otherwise), or undefined when absent. */
function oneOf<T extends string>(name: string, v: string | boolean | undefined, allowed: readonly T[]): T | undefined {
  if (v === undefined) return undefined;
  if (!allowed.includes(v as T)) throw new UsageError(`--${name} must be ${allowed.slice(0, -1).join(', ')} or ${allowed[allowed.length - 1]}, got ${JSON.stringify(v)}`);
  return v as T;
}

/** `n` with a decimal unit (B, kB, MB, GB) and three significant digits. */
function decimal(n: number, unit: string): string {
  const steps = ['', 'k', 'M', 'G', 'T'];
  let i = 0;
  while (i < steps.length - 1 && Math.abs(n) >= 999.5) {
    n /= 1000;
    i++;
  }
  return `${n < 10 && i > 0 ? n.toFixed(2) : n < 100 && i > 0 ? n.toFixed(1) : n.toFixed(0)} ${steps[i]}${unit}`;
}

/** `v` rounded to `digits` significant digits (the JSON summary's seconds and rates). */
const round = (v: number, digits = 4): number => (v === 0 || !Number.isFinite(v) ? v : Number(v.toPrecision(digits)));

/** The flags that take a value (a value may start with '-': `--eps -1e-3`, `--offset -1`). */
const VALUED = ['dtype', 'weight-dtype', 'casting-mode', 'weight', 'eps', 'dim', 'threads', 'offset', 'partial', 'rstd', 'format'];

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
function asFlags(msg: string): string {
  return msg
    .replace(/^(normalizeFile|createPool): /, '')
    .replace(/options\.([A-Za-z]+)/g, (_, k: string) => `--${k.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase())}`);
}

const SEE_HELP = '(see rmsnorm-wasm --help)';

/** parseArgs' errors in the command's words: the flag and what is wrong, one line. */
function usageError(e: Error & { code?: string }): string {
  const flag = /'(-[^' ]+)/.exec(e.message)?.[1] ?? '';
  if (e.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return `unknown option ${flag}`;
  if (e.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    return /does not take an argument/.test(e.message) ? `${flag} takes no value` : `${flag} needs a value`;
  }
  return e.message;
}

/** The live progress line (terminal only): rows done, percent, GB/s, ETA. */
function progressLine(p: NormalizeProgress): string {
  const pct = p.totalBytes ? (100 * p.bytes) / p.totalBytes : 100;
  const rate = p.seconds > 0 ? p.bytes / p.seconds : 0;
  const eta = rate > 0 ? (p.totalBytes - p.bytes) / rate : 0;
  return `${p.rows.toLocaleString('en-US')}/${p.totalRows.toLocaleString('en-US')} rows  ${pct.toFixed(1)}%  ${decimal(rate, 'B/s')}  ETA ${eta.toFixed(0)} s`;
}

function summaryLine(s: NormalizeSummary): string {
  return (
    `normalized ${s.rows.toLocaleString('en-US')} rows × ${s.dim} (${s.dtype}, ${decimal(s.bytes, 'B')}) ` +
    `in ${s.seconds < 0.1 ? `${(s.seconds * 1000).toFixed(1)} ms` : `${s.seconds.toFixed(2)} s`}: ${decimal(s.gbPerS * 1e9, 'B/s')} on ${s.threads} thread${s.threads === 1 ? '' : 's'} → ${s.output}`
  );
}

/** Runs the command with `argv` (without node and the script); resolves to the exit code. */
export async function main(argv: string[]): Promise<number> {
  let values: Record<string, string | boolean | undefined>;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: joinNegativeValues(argv),
      allowPositionals: true,
      strict: true,
      options: {
        dtype: { type: 'string' },
        'weight-dtype': { type: 'string' },
        'casting-mode': { type: 'string' },
        weight: { type: 'string' },
        eps: { type: 'string' },
        dim: { type: 'string' },
        threads: { type: 'string' },
        offset: { type: 'string' },
        partial: { type: 'string' },
        rstd: { type: 'string' },
        format: { type: 'string' },
        'in-place': { type: 'boolean' },
        quiet: { type: 'boolean' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
    }));
  } catch (e) {
    process.stderr.write(`rmsnorm-wasm: ${usageError(e as Error & { code?: string })} ${SEE_HELP}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  if (values.version) {
    process.stdout.write(version() + '\n');
    return 0;
  }
  const ac = new AbortController();
  let interrupted = false;
  const onSigint = () => {
    interrupted = true;
    ac.abort(new Error('interrupted'));
  };
  try {
    if (positionals[0] !== 'normalize' || positionals.length !== 3) {
      throw new UsageError(positionals.length === 0 ? 'no command given' : `expected "normalize IN OUT", got ${JSON.stringify(positionals.join(' '))}`);
    }
    const [, input, output] = positionals as [string, string, string];
    const format = values.format as string | undefined;
    if (format !== undefined && format !== 'npy' && format !== 'raw') throw new UsageError(`--format must be npy or raw, got ${JSON.stringify(format)}`);
    const dtype = oneOf('dtype', values.dtype, DTYPE_NAMES);
    const weightDtype = oneOf('weight-dtype', values['weight-dtype'], DTYPE_NAMES);
    const castingMode = oneOf('casting-mode', values['casting-mode'], CASTING_MODES);
    const tty = process.stderr.isTTY && !values.quiet && !values.json;
    process.on('SIGINT', onSigint);
    const summary = await normalizeFile(input, output, {
      weight: values.weight as string | undefined,
      dtype,
      weightDtype,
      castingMode,
      eps: num('eps', values.eps as string | undefined),
      dim: num('dim', values.dim as string | undefined, true),
      threads: num('threads', values.threads as string | undefined, true),
      offset: num('offset', values.offset as string | undefined),
      partial: num('partial', values.partial as string | undefined),
      rstd: values.rstd as string | undefined,
      format: format as 'npy' | 'raw' | undefined,
      inPlace: values['in-place'] === true,
      signal: ac.signal,
      onProgress: tty
        ? (p) => {
            cursorTo(process.stderr, 0);
            process.stderr.write(progressLine(p));
            clearLine(process.stderr, 1);
          }
        : undefined,
    });
    if (tty) {
      cursorTo(process.stderr, 0);
      clearLine(process.stderr, 0);
    }
    if (values.json) process.stdout.write(JSON.stringify({ ...summary, seconds: round(summary.seconds), gbPerS: round(summary.gbPerS) }) + '\n');
    else if (!values.quiet) process.stdout.write(summaryLine(summary) + '\n');
    return 0;
  } catch (e) {
    if (process.stderr.isTTY) {
      cursorTo(process.stderr, 0);
      clearLine(process.stderr, 0);
    }
    if (interrupted) {
      process.stderr.write('rmsnorm-wasm: interrupted; no output was written\n');
      return 130;
    }
    if (e instanceof UsageError) {
      process.stderr.write(`rmsnorm-wasm: ${e.message} ${SEE_HELP}\n`);
      return 2;
    }
    const msg = (e as Error).message ?? String(e);
    // Bad arguments and bad files: a message, never a stack trace.
    process.stderr.write(`rmsnorm-wasm: error: ${asFlags(msg)}\n`);
    return 1;
  } finally {
    process.off('SIGINT', onSigint);
  }
}
