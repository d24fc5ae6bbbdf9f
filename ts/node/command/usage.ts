/**
 * The command's usage text (`--help`): what it does, every flag, the exit codes and signals.
 * The scalar options' lines come from their table (check/scalar-options.ts).
 * @module
 */
import { SCALARS } from '../../call/check/scalar-options.js';
import { KERNEL_DTYPES, listed, OUT_DTYPES, QUANT_DTYPES } from '../../glue/dtypes.js';
import { flagOf, NBSP, NUMBER_OPTIONS } from './flags.js';
import { FORMAT_NAMES, FORMATS } from '../formats/index.js';
import { datasetProgressLine, logLine } from './text.js';

/** Where a flag's help starts, and the width its lines wrap at. */
const HELP_AT = 22;
const WIDTH = 90;

/** A flag's lines of help: `--flag V` then `help`, wrapped at {@link WIDTH} under {@link HELP_AT}. */
function flagLines(flag: string, help: string): string {
  const lines = [`  ${flag}`.padEnd(HELP_AT)];
  for (const word of help.split(' ')) {
    const last = lines.length - 1;
    if (lines[last]!.length + word.length + 1 > WIDTH && lines[last]!.trim() !== flag) lines.push(' '.repeat(HELP_AT) + word);
    else lines[last] += (lines[last]!.length > HELP_AT ? ' ' : '') + word;
  }
  return lines.join('\n').replaceAll(NBSP, ' ');
}

/** A default as the help shows it: 1e-6, not 0.000001. */
const shown = (v: number) => (v !== 0 && Math.abs(v) < 1e-3 ? v.toExponential() : String(v));

/** The other options read as a number, each `--NAME V` with its help. */
const NUMBER_LINES = Object.entries(NUMBER_OPTIONS)
  .map(([k, o]) => flagLines(`--${flagOf(k)} ${o.letter}`, o.help))
  .join('\n');

/** The scalar options' flags, each `--NAME V` with its help and default. */
const SCALAR_LINES = Object.entries(SCALARS)
  .map(([k, s]) => flagLines(`--${flagOf(k)} ${s.flag.letter}`, `${s.flag.help} (default${NBSP}${shown(s.fallback)})`))
  .join('\n');

/** A dataset's log line, as --help shows it: made by the function that makes the real ones. */
const EXAMPLE_LOG_LINE = `    ${logLine(datasetProgressLine({ files: 12, totalFiles: 60, bytes: 1.234e9, totalBytes: 4.56e9, rows: 301_250, seconds: 20 }), 20)}`;

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
${NUMBER_LINES}
  --tensor NAME       in an .npz or safetensors IN: normalize this array (repeat for more;
                      default: every float array)
  --weight W          the gain, dim elements: a .npy, an .npz or safetensors file holding
                      it (see --weight-tensor), or a raw file (default: none)
  --weight-tensor N   the weight's array in an .npz or safetensors W of several
  --weight-dtype T    what a raw W holds (default float32); for a file with a header
                      optional, and checked against it
  --casting-mode M    none, llama or gemma: where half results are rounded (default none)
${SCALAR_LINES}
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
  --shard I/N         with --out-dir: process only shard I (0 to N-1) of N (at most
                      1000000); N processes given the same inputs cover them exactly once
                      (their manifests: DIR/manifest.shard-I-of-N.jsonl); a file over 64 MiB
                      and over 1/N of the data is split by rows into NAME.part-K-of-P files
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
  --progress M        auto, tty, log or none: a live line on a terminal (tty; without one,
                      log, with a warning); a line every --progress-interval seconds, for
                      logs (log), such as (a dataset's; the files in flight counted)
${EXAMPLE_LOG_LINE}
                      auto (default): tty on a terminal, else log
  --progress-interval S  seconds between log lines (default 10)
  --quiet             print nothing but errors (--progress none)
  --json              print the summary as JSON
  --help, --version

Exit codes: 0 done; 1 a bad file or a failed run (the message names the file); 2 bad usage
or a bad option value, found before anything is read or made; 75 another run holds the
shard (--lock-wait ran out, or it took this run's lock
over); 130, 143 or 129 stopped by SIGINT, SIGTERM or SIGHUP, within a quarter of a second whatever
pid the command has (PID 1 of a container too): temporary files are removed, and with
--out-dir the outputs completed so far are kept and recorded (run the same command again to
resume); 137 the work process was killed (out of memory?), its temporary files removed.`;
