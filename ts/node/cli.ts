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
import { normalizeFile } from './file.js';
import { normalizeDataset } from './dataset/run.js';
import { datasetProgressLine, datasetSummaryLine, jsonLine, progressLine, summaryLine } from './cli-text.js';

const USAGE = `Usage: rmsnorm-wasm normalize IN OUT [options]
       rmsnorm-wasm normalize IN... --out-dir DIR [options]

Normalizes every row of IN (NumPy .npy float32 or float16, C order, the last axis is the
row; or raw little-endian float32, float16 or bfloat16 with --dim and --dtype) with RMSNorm on
worker threads, writing OUT in the same format and dtype (the math is float32). OUT appears
only when complete; IN is never modified.

With --out-dir, every IN — files, directories (their .npy files, or every file with
--format raw, recursively) and quoted glob patterns ('data/**/*.npy') — is written to DIR
at the same relative path, on one pool. DIR/manifest.jsonl gets a JSON line per output
once it is complete; a rerun skips outputs recorded there (same input size and time, same
options) and redoes the rest, so a killed run is resumed by running it again.

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
  --verbose           with --out-dir: a line per file on stderr
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

/** The flags that take a value (a value may start with '-': `--eps -1e-3`, `--offset -1`). */
const VALUED = ['dtype', 'weight-dtype', 'casting-mode', 'weight', 'eps', 'dim', 'threads', 'offset', 'partial', 'rstd', 'format', 'out-dir', 'shard'];

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
    .replace(/^(normalizeFile|normalizeDataset|createPool): /, '')
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

/** --shard I/N as `{ index, count }` (undefined when absent). */
function shardFlag(v: string | undefined): { index: number; count: number } | undefined {
  if (v === undefined) return undefined;
  const m = /^(\d+)\/(\d+)$/.exec(v);
  const index = Number(m?.[1]);
  const count = Number(m?.[2]);
  if (!m || count < 1 || index >= count) throw new UsageError(`--shard must be I/N with 0 <= I < N (e.g. 0/4), got ${JSON.stringify(v)}`);
  return { index, count };
}

/** Clears the live progress line. */
function clearStatus(): void {
  cursorTo(process.stderr, 0);
  clearLine(process.stderr, 0);
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
        'out-dir': { type: 'string' },
        shard: { type: 'string' },
        force: { type: 'boolean' },
        'keep-going': { type: 'boolean' },
        checksum: { type: 'boolean' },
        verbose: { type: 'boolean' },
        'no-fsync': { type: 'boolean' },
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
  let tty = false;
  let interrupted = false;
  const onSigint = () => {
    interrupted = true;
    ac.abort(new Error('interrupted'));
  };
  try {
    const outDir = values['out-dir'] as string | undefined;
    if (positionals[0] !== 'normalize') {
      throw new UsageError(positionals.length === 0 ? 'no command given' : `unknown command ${JSON.stringify(positionals[0])} (the command is normalize)`);
    }
    if (outDir === undefined && positionals.length !== 3) {
      throw new UsageError(`expected "normalize IN OUT" or "normalize IN... --out-dir DIR", got ${JSON.stringify(positionals.join(' '))}`);
    }
    if (outDir !== undefined && positionals.length < 2) throw new UsageError('--out-dir needs at least one input');
    for (const f of outDir === undefined ? ['shard', 'force', 'keep-going', 'checksum', 'verbose'] : ['rstd', 'in-place']) {
      if (values[f] !== undefined) throw new UsageError(outDir === undefined ? `--${f} needs --out-dir` : `--${f} is for one file, not with --out-dir`);
    }
    const format = values.format as string | undefined;
    if (format !== undefined && format !== 'npy' && format !== 'raw') throw new UsageError(`--format must be npy or raw, got ${JSON.stringify(format)}`);
    const common = {
      weight: values.weight as string | undefined,
      dtype: oneOf('dtype', values.dtype, DTYPE_NAMES),
      weightDtype: oneOf('weight-dtype', values['weight-dtype'], DTYPE_NAMES),
      castingMode: oneOf('casting-mode', values['casting-mode'], CASTING_MODES),
      eps: num('eps', values.eps as string | undefined),
      dim: num('dim', values.dim as string | undefined, true),
      threads: num('threads', values.threads as string | undefined, true),
      offset: num('offset', values.offset as string | undefined),
      partial: num('partial', values.partial as string | undefined),
      format: format as 'npy' | 'raw' | undefined,
      durable: values['no-fsync'] !== true,
      signal: ac.signal,
    };
    const shard = shardFlag(values.shard as string | undefined);
    tty = process.stderr.isTTY && !values.quiet && !values.json;
    const live = (line: string): void => {
      cursorTo(process.stderr, 0);
      process.stderr.write(line);
      clearLine(process.stderr, 1);
    };
    process.on('SIGINT', onSigint);
    if (outDir !== undefined) {
      const s = await normalizeDataset(positionals.slice(1), outDir, {
        ...common,
        shard,
        force: values.force === true,
        keepGoing: values['keep-going'] === true,
        checksum: values.checksum === true,
        onProgress: tty ? (p) => live(datasetProgressLine(p)) : undefined,
        onFile: values.verbose
          ? (e) => {
              if (tty) clearStatus();
              process.stderr.write(e.status === 'failed' ? `failed  ${asFlags(e.error.message)}\n` : `${e.status} ${e.record.output}\n`);
            }
          : undefined,
      });
      if (tty) clearStatus();
      if (values.json) process.stdout.write(jsonLine(s) + '\n');
      else if (!values.quiet) process.stdout.write(datasetSummaryLine(s, outDir) + '\n');
      for (const f of s.failed) process.stderr.write(`rmsnorm-wasm: failed: ${asFlags(f.error)}\n`);
      return s.failed.length ? 1 : 0;
    }
    const [, input, output] = positionals as [string, string, string];
    const summary = await normalizeFile(input, output, {
      ...common,
      rstd: values.rstd as string | undefined,
      inPlace: values['in-place'] === true,
      onProgress: tty ? (p) => live(progressLine(p)) : undefined,
    });
    if (tty) clearStatus();
    if (values.json) process.stdout.write(jsonLine(summary) + '\n');
    else if (!values.quiet) process.stdout.write(summaryLine(summary) + '\n');
    return 0;
  } catch (e) {
    if (tty) clearStatus();
    if (interrupted) {
      process.stderr.write(
        values['out-dir'] === undefined
          ? 'rmsnorm-wasm: interrupted; no output was written\n'
          : 'rmsnorm-wasm: interrupted; the outputs completed so far are kept and recorded: run the same command again to resume\n',
      );
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
