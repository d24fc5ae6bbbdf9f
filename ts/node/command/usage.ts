/**
 * The command's usage text (`--help`): what it does, then every flag's line from the flags'
 * table (flags.ts), then the exit codes from theirs (exit-codes.ts).
 * @module
 */
import { EXIT_CODES_TEXT } from '../exit-codes.js';
import { FLAGS, NBSP, type Flag } from './flags.js';

/** Where a flag's help starts, and the width its lines wrap at. */
const HELP_AT = 22;
const WIDTH = 90;

/** `text` wrapped at {@link WIDTH}, its first line starting with `first`, the others indented to {@link HELP_AT}. */
function wrapped(first: string, text: string, at = HELP_AT): string {
  const lines = [first.length + 2 > at && first.trim() !== '' ? `${first} ` : first.padEnd(at)];
  for (const word of text.split(' ')) {
    const last = lines.length - 1;
    if (lines[last]!.length + word.length + 1 > WIDTH && lines[last]!.trim() !== first.trim()) lines.push(' '.repeat(at) + word);
    else lines[last] += (lines[last]!.length > at ? ' ' : '') + word;
  }
  return lines.join('\n').replaceAll(NBSP, ' ');
}

/** A flag's lines of `--help`: `--flag V`, its help (a dataset's said to be for --out-dir), its example. */
function flagLines(name: string, f: Flag): string {
  const head = `  --${name}${f.short ? `, -${f.short}` : ''}${f.letter ? ` ${f.letter}` : ''}`;
  const help = f.runs === 'dataset' && !(f.setting && f.key === 'outDir') ? `with --out-dir: ${f.help}` : f.help;
  return wrapped(head, help) + (f.example ? `\n    ${f.example()}` : '');
}

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
${Object.entries(FLAGS).map(([name, f]) => flagLines(name, f)).join('\n')}

${wrapped('', EXIT_CODES_TEXT, 0)}`;
