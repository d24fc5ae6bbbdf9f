/**
 * Paths as the file system has them: a string, or the raw bytes of a name that is not UTF-8
 * (Linux names are bytes; a directory walk returns such names as Buffers, which every `fs`
 * call accepts). Joining, splitting and showing them in messages without losing a byte.
 * @module
 */
import { createHash } from 'node:crypto';

/** A path: a string, or a Buffer of bytes that are not valid UTF-8. */
export type FsPath = string | Buffer;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** `b` as a string when its bytes are UTF-8, else the Buffer itself. */
export function fromBytes(b: Buffer): FsPath {
  try {
    return utf8.decode(b);
  } catch {
    return b;
  }
}

/** The bytes of a path. */
export const bytesOf = (p: FsPath): Buffer => (typeof p === 'string' ? Buffer.from(p, 'utf8') : p);

/** `a/b/…`: the parts joined with `/` (bytes kept; a string when every part is one). */
export function joinPath(...parts: FsPath[]): FsPath {
  const kept = parts.filter((p) => p.length > 0);
  if (kept.every((p) => typeof p === 'string')) return kept.join('/').replace(/\/{2,}/g, '/');
  const out: Buffer[] = [];
  kept.forEach((p, i) => {
    const b = bytesOf(p);
    out.push(i > 0 && out[out.length - 1]![out[out.length - 1]!.length - 1] !== 0x2f ? Buffer.concat([Buffer.from('/'), b]) : b);
  });
  return fromBytes(Buffer.concat(out));
}

/** The last name of a path (a trailing `/` ignored). */
export function baseOf(p: FsPath): FsPath {
  const b = bytesOf(p);
  let end = b.length;
  while (end > 1 && b[end - 1] === 0x2f) end--;
  const start = b.lastIndexOf(0x2f, end - 1) + 1;
  return typeof p === 'string' ? p.slice(0, end).slice(p.slice(0, end).lastIndexOf('/') + 1) : fromBytes(b.subarray(start, end));
}

/** The directory part of a path (`.` for a bare name). */
export function dirOf(p: FsPath): FsPath {
  const b = bytesOf(p);
  let end = b.length;
  while (end > 1 && b[end - 1] === 0x2f) end--;
  const slash = b.lastIndexOf(0x2f, end - 1);
  if (slash < 0) return '.';
  if (slash === 0) return '/';
  return typeof p === 'string' ? p.slice(0, p.slice(0, end).lastIndexOf('/')) : fromBytes(b.subarray(0, slash));
}

/** The stem and extension of an output path: `a/b.npy` → `a/b`, `.npy` (no extension: all stem). */
export function stemOf(rel: FsPath): [stem: Buffer, ext: Buffer] {
  const b = bytesOf(rel);
  const slash = b.lastIndexOf(0x2f);
  const dot = b.lastIndexOf(0x2e);
  return dot > slash + 1 ? [b.subarray(0, dot), b.subarray(dot)] : [b, Buffer.alloc(0)];
}

/** Bytes of a name on disk (what NAME_MAX, 255 on Linux, limits). */
export const byteLength = (p: FsPath): number => (typeof p === 'string' ? Buffer.byteLength(p) : p.length);

/** The longest name a Linux file system takes, in bytes. */
export const NAME_MAX = 255;

/** A short hash of a path's bytes (hex), for names that must stay within {@link NAME_MAX}. */
export const pathHash = (p: FsPath, hexChars = 16): string => createHash('sha256').update(bytesOf(p)).digest('hex').slice(0, hexChars);

/**
 * A path as a message shows it: as it is when it is printable UTF-8; otherwise in double quotes
 * with control characters escaped (`\n`, `\u001b`) and bytes that are not UTF-8 as `\xNN`, so
 * that a message stays one line and names the file exactly.
 */
export function shown(p: FsPath): string {
  let s: string;
  let escaped = false;
  if (typeof p === 'string') s = p;
  else {
    s = '';
    // Decode byte by byte where it fails: each invalid byte becomes \xNN.
    let i = 0;
    while (i < p.length) {
      let n = 1;
      const c = p[i]!;
      if (c >= 0xf0) n = 4;
      else if (c >= 0xe0) n = 3;
      else if (c >= 0xc0) n = 2;
      try {
        s += utf8.decode(p.subarray(i, i + n));
        i += n;
      } catch {
        s += `\\x${c.toString(16).padStart(2, '0')}`;
        escaped = true;
        i++;
      }
    }
  }
  if (!escaped && !/[\x00-\x1f\x7f\u0080-\u009f\u2028\u2029]/.test(s)) return s;
  const body = s.replace(/[\x00-\x1f\x7f\u0080-\u009f\u2028\u2029"]/g, (c) =>
    c === '"' ? '\\"' : c === '\n' ? '\\n' : c === '\t' ? '\\t' : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  return `"${body}"`;
}

/** A path's text for a JSON record: itself when UTF-8, else its bytes in base64 (the record says which). */
export function recordPath(p: FsPath): { text: string; base64?: string } {
  return typeof p === 'string' ? { text: p } : { text: shown(p), base64: p.toString('base64') };
}
