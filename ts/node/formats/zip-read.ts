/**
 * Reading the ZIP container (PKWARE's APPNOTE), as far as `.npz` files need it: the central
 * directory (ZIP64 included), checked against the file before any size in it is used, and
 * members stored or deflated (inflated with `node:zlib`), every member's CRC-32 checked.
 * Writing is zip-write.ts.
 * @module
 */
import { createInflateRaw, crc32 } from 'node:zlib';
import { pipeline, Readable } from 'node:stream';
import { NormalizeError } from '../io/errors.js';
import { Sequential, type Source } from '../io/source.js';

/** A member, as the central directory describes it. */
interface ZipMember {
  name: string;
  /** The name's bytes, as the central directory has them (the local header must agree). */
  nameBytes: Uint8Array;
  method: number;
  flags: number;
  crc: number;
  compressed: number;
  size: number;
  /** Where its local header starts. */
  local: number;
  /** Where its data starts (after its local header). */
  start: number;
}

const U32 = 0xffffffff;
const U16 = 0xffff;

/** CP437's upper half, the names of members without the UTF-8 flag (as Python's zipfile decodes them). */
const CP437 =
  'ÇüéâäàåçêëèïîìÄÅÉæÆôöòûùÿÖÜ¢£¥₧ƒáíóúñÑªº¿⌐¬½¼¡«»░▒▓│┤╡╢╖╕╣║╗╝╜╛┐└┴┬├─┼╞╟╚╔╩╦╠═╬╧╨╤╥╙╘╒╓╫╪┘┌█▄▌▐▀αßΓπΣσµτΦΘΩδ∞φε∩≡±≥≤⌠⌡÷≈°∙·√ⁿ²■\u00a0';

/**
 * A member's name: UTF-8 when its flag says so (refused, as Python's zipfile refuses it, when
 * the bytes are not UTF-8: a name written back must be the name read), else CP437.
 */
function nameOf(b: Uint8Array, utf8: boolean, zip: string): string {
  if (utf8) {
    try {
      return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(b);
    } catch {
      throw new NormalizeError(`${zip}: a member whose name is flagged UTF-8 is not (bytes ${Buffer.from(b.subarray(0, 40)).toString('hex')}${b.length > 40 ? '…' : ''}): refused, as it could not be written back as read`);
    }
  }
  let s = '';
  for (const c of b) s += c < 0x80 ? String.fromCharCode(c) : CP437[c - 0x80];
  return s;
}

/** Reads `n` bytes at `pos` of `src`, all of them or a NormalizeError saying the zip is cut. */
async function readExact(src: Source, pos: number, n: number, name: string): Promise<DataView> {
  const b = new Uint8Array(n);
  if ((await src.read(b, pos)) !== n) throw new NormalizeError(`${name}: a truncated zip file`);
  return new DataView(b.buffer);
}

/**
 * The members of the zip `src` (a regular file), in the order of their data; a NormalizeError
 * naming `name` if it is not a readable zip. Every size and offset is checked against the file
 * before it is used, and the members must lie one after another before the central directory:
 * a member whose local header names it otherwise, or whose bytes overlap another's (many
 * entries over one member's data, a zip "bomb" by overlap), is refused.
 */
export async function readMembers(src: Source, name: string): Promise<ZipMember[]> {
  const size = src.size!;
  const damaged = (what: string) => new NormalizeError(`${name}: a damaged zip file (${what})`);
  const tailLen = Math.min(size, 22 + U16);
  const tail = await readExact(src, size - tailLen, tailLen, name);
  let eocd = -1;
  for (let i = tailLen - 22; i >= 0; i--) if (tail.getUint32(i, true) === 0x06054b50) { eocd = i; break; }
  if (eocd < 0) throw new NormalizeError(`${name}: not a zip file (no end of central directory)`);
  let end = size - tailLen + eocd; // where the central directory must end
  let count = tail.getUint16(eocd + 10, true);
  let cdSize = tail.getUint32(eocd + 12, true);
  let cdAt = tail.getUint32(eocd + 16, true);
  if (count === U16 || cdSize === U32 || cdAt === U32) {
    const locAt = end - 20;
    if (locAt < 0) throw new NormalizeError(`${name}: a ZIP64 archive without its locator`);
    const loc = await readExact(src, locAt, 20, name);
    if (loc.getUint32(0, true) !== 0x07064b50) throw new NormalizeError(`${name}: a ZIP64 archive without its locator`);
    const recAt = Number(loc.getBigUint64(8, true));
    if (recAt + 56 > locAt) throw damaged(`its ZIP64 end record is said to be at byte ${recAt}`);
    const rec = await readExact(src, recAt, 56, name);
    if (rec.getUint32(0, true) !== 0x06064b50) throw new NormalizeError(`${name}: a damaged ZIP64 end of central directory`);
    count = Number(rec.getBigUint64(32, true));
    cdSize = Number(rec.getBigUint64(40, true));
    cdAt = Number(rec.getBigUint64(48, true));
    end = recAt;
  }
  if (cdAt + cdSize > end) throw damaged(`its central directory of ${cdSize} bytes at byte ${cdAt} runs past where it must end, byte ${end}`);
  if (count * 46 > cdSize) throw damaged(`${count} members cannot fit in a central directory of ${cdSize} bytes`);
  const cd = await readExact(src, cdAt, cdSize, name);
  const out: ZipMember[] = [];
  for (let p = 0, k = 0; k < count; k++) {
    if (p + 46 > cdSize || cd.getUint32(p, true) !== 0x02014b50) throw new NormalizeError(`${name}: a damaged zip central directory`);
    const flags = cd.getUint16(p + 8, true);
    const nameLen = cd.getUint16(p + 28, true);
    const extraLen = cd.getUint16(p + 30, true);
    if (p + 46 + nameLen + extraLen > cdSize) throw new NormalizeError(`${name}: a damaged zip central directory`);
    const nameBytes = new Uint8Array(cd.buffer, p + 46, nameLen);
    const m: ZipMember = {
      name: nameOf(nameBytes, (flags & 0x800) !== 0, name),
      nameBytes,
      method: cd.getUint16(p + 10, true),
      flags,
      crc: cd.getUint32(p + 16, true),
      compressed: cd.getUint32(p + 20, true),
      size: cd.getUint32(p + 24, true),
      local: cd.getUint32(p + 42, true),
      start: 0,
    };
    // ZIP64: the fields that overflowed, in this order, in extra field 0x0001.
    for (let e = p + 46 + nameLen; e + 4 <= p + 46 + nameLen + extraLen; ) {
      const id = cd.getUint16(e, true);
      const len = cd.getUint16(e + 2, true);
      if (id === 0x0001) {
        let f = e + 4;
        for (const key of ['size', 'compressed', 'local'] as const) {
          if (m[key] === U32 && f + 8 <= e + 4 + len) {
            m[key] = Number(cd.getBigUint64(f, true));
            f += 8;
          }
        }
      }
      e += 4 + len;
    }
    out.push(m);
    p += 46 + nameLen + extraLen + cd.getUint16(p + 32, true);
  }
  out.sort((a, b) => a.local - b.local);
  // Each member's local header and data, one after another, all before the central directory.
  let free = 0;
  for (const m of out) {
    const where = `member ${JSON.stringify(m.name)}`;
    if (m.local < free) throw damaged(`${where} overlaps the member before it`);
    if (m.local + 30 > cdAt) throw damaged(`${where} is said to start at byte ${m.local}, past its data's end`);
    const h = await readExact(src, m.local, 30, name);
    if (h.getUint32(0, true) !== 0x04034b50) throw new NormalizeError(`${name}: ${where}: a damaged local header`);
    const nameLen = h.getUint16(26, true);
    m.start = m.local + 30 + nameLen + h.getUint16(28, true);
    if (m.start + m.compressed > cdAt) throw damaged(`${where} of ${m.compressed} bytes runs past its data's end`);
    const local = new Uint8Array((await readExact(src, m.local + 30, nameLen, name)).buffer);
    if (Buffer.compare(local, m.nameBytes) !== 0) throw damaged(`${where} is named ${JSON.stringify(new TextDecoder().decode(local))} in its local header`);
    if (m.method === 0 && m.size !== m.compressed) throw damaged(`${where} is stored, but its sizes differ`);
    free = m.start + m.compressed;
  }
  return out;
}

/** Where member `m`'s data starts (after its local header); a NormalizeError for what cannot be read. */
export function dataStart(m: ZipMember, name: string): number {
  const where = `${name}: member ${JSON.stringify(m.name)}`;
  if (m.flags & 1) throw new NormalizeError(`${where} is encrypted`);
  if (m.method !== 0 && m.method !== 8) throw new NormalizeError(`${where} is compressed with method ${m.method}; only stored (0) and deflated (8) members are read`);
  return m.start;
}

/** Checks the CRC-32 of stored member `m` of `src` against the directory's: its bytes read once, in 4 MiB reads. */
export async function checkStoredCrc(src: Source, m: ZipMember, name: string): Promise<void> {
  const buf = new Uint8Array(Math.min(m.size, 4 << 20));
  let crc = 0;
  for (let at = 0; at < m.size; ) {
    const n = await src.read(buf.subarray(0, Math.min(buf.length, m.size - at)), m.start + at);
    if (n === 0) throw new NormalizeError(`${name}: a truncated zip file`);
    crc = crc32(buf.subarray(0, n), crc);
    at += n;
  }
  if (crc >>> 0 !== m.crc >>> 0) throw new NormalizeError(`${name}: member ${JSON.stringify(m.name)}: its data does not match its CRC-32: the file is damaged`);
}

/** A deflated member, inflated as it is read (a stream: front to back); its CRC-32 and size checked at its end. */
export class InflateSource extends Sequential {
  private out: AsyncIterator<Buffer> | null = null;
  private pending: Uint8Array = new Uint8Array(0);
  private crc = 0;
  private total = 0;

  constructor(
    private readonly file: Source,
    private readonly start: number,
    private readonly m: ZipMember,
    private readonly where: string,
  ) {
    super(file.path, file.stats);
  }

  protected async pull(into: Uint8Array, off: number, len: number): Promise<number> {
    while (this.pending.length === 0) {
      this.out ??= this.inflate();
      let r: IteratorResult<Buffer>;
      try {
        r = await this.out.next();
      } catch (e) {
        throw e instanceof NormalizeError ? e : new NormalizeError(`${this.where}: its deflated data is damaged (${(e as Error).message})`);
      }
      if (r.done) {
        if (this.total !== this.m.size || this.crc >>> 0 !== this.m.crc >>> 0) {
          throw new NormalizeError(`${this.where}: its data does not match the zip directory (CRC-32 or size): the file is damaged`);
        }
        return 0;
      }
      this.pending = r.value;
      this.crc = crc32(r.value, this.crc);
      this.total += r.value.length;
      // Checked as soon as the member's last byte is out: a reader stops at its arrays' end.
      if (this.total > this.m.size || (this.total === this.m.size && this.crc >>> 0 !== this.m.crc >>> 0)) {
        throw new NormalizeError(`${this.where}: its data does not match the zip directory (CRC-32 or size): the file is damaged`);
      }
    }
    const n = Math.min(len, this.pending.length);
    into.set(this.pending.subarray(0, n), off);
    this.pending = this.pending.subarray(n);
    return n;
  }

  private inflate(): AsyncIterator<Buffer> {
    const { file, start, where } = this;
    const end = start + this.m.compressed;
    const compressed = Readable.from(
      (async function* () {
        for (let pos = start; pos < end; ) {
          const b = Buffer.alloc(Math.min(1 << 20, end - pos));
          const n = await file.read(b, pos);
          if (n === 0) throw new NormalizeError(`${where}: the zip file is truncated`);
          pos += n;
          yield b.subarray(0, n);
        }
      })(),
    );
    return pipeline(compressed, createInflateRaw(), () => {})[Symbol.asyncIterator]();
  }

  async close(): Promise<void> {}
}
