/**
 * The formats, and telling which one a file is by its first bytes — never by its name.
 * @module
 */
import { listed } from '../../glue/dtypes.js';
import { NormalizeError } from '../io/errors.js';
import { shown } from '../io/paths.js';
import type { Source } from '../io/source.js';
import { npyFormat } from './npy.js';
import { npzFormat } from './npz.js';
import { rawFormat } from './raw.js';
import { safetensorsFormat } from './safetensors.js';
import type { Format, FormatName } from './types.js';

export type { ArrayIn, ArrayOut, Contents, Format, FormatName, FormatWriter } from './types.js';

/** Every format, the ones a file's bytes can identify first. */
export const FORMATS: readonly Format[] = [npyFormat, npzFormat, safetensorsFormat, rawFormat];

/** The names of {@link FORMATS}. */
export const FORMAT_NAMES: readonly FormatName[] = FORMATS.map((f) => f.name);

/** The format named `name`. */
export const formatNamed = (name: FormatName): Format => FORMATS.find((f) => f.name === name)!;

/** Whether a directory walk takes every file for `format`: one known by no name (raw), when it is asked for. */
const takesAll = (format: FormatName | undefined) => format !== undefined && formatNamed(format).extensions.length === 0;

/** Whether a directory walk takes a file of this name (an extension some format has), or every file (raw). */
export function takesName(name: string, format: FormatName | undefined): boolean {
  if (takesAll(format)) return true;
  const lower = name.toLowerCase();
  return FORMATS.some((f) => (format === undefined || f.name === format) && f.extensions.some((e) => lower.endsWith(e)));
}

/** What a directory walk takes, in words: the extensions of `format` (all formats' by default), or every file for raw. */
export function takenNames(format: FormatName | undefined): string {
  if (takesAll(format)) return `every file (--format ${format})`;
  const ext = FORMATS.filter((f) => format === undefined || f.name === format).flatMap((f) => f.extensions);
  return `files named ${listed(ext.map((e) => `*${e}`), '')}`;
}

/** A file no format's first bytes tell: what it is not, and how the formats without a header are asked for (from {@link FORMATS}). */
function notKnown(path: string, head: string): string {
  const told = FORMATS.filter((f) => f.header).map((f) => f.title);
  const asked = FORMATS.filter((f) => !f.header).map((f) => `${f.title} is read with options.format ${f.name} and options.dim`);
  return `${path}: not ${listed(told, '')} file (${head}); ${asked.join('; ')}`;
}

/** The first bytes of a file as a message shows them: text when they are printable, else hex. */
function described(head: Uint8Array): string {
  if (head.length === 0) return 'it is empty';
  const printable = head.every((c) => c >= 0x20 && c < 0x7f);
  const text = printable ? JSON.stringify(Buffer.from(head).toString('latin1')) : Buffer.from(head).toString('hex').replace(/(..)(?!$)/g, '$1 ');
  return `it starts with ${text}`;
}

/**
 * The format of `src`: `given`, or the one its first bytes identify. A NormalizeError naming
 * the file and what it starts with when none does (raw data is read only when asked for).
 */
export async function formatOf(src: Source, given: FormatName | undefined): Promise<Format> {
  if (given !== undefined) return formatNamed(given);
  const head = new Uint8Array(16);
  const n = await src.read(head, 0);
  const found = FORMATS.find((f) => f.detect(head.subarray(0, n)));
  if (found) return found;
  throw new NormalizeError(notKnown(shown(src.path), described(head.subarray(0, Math.min(n, 8)))));
}
