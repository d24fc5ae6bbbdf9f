/**
 * Writing the ZIP container (PKWARE's APPNOTE) as `.npz` outputs need it: members stored, each
 * followed by a data descriptor with its CRC-32 (so that no byte is written twice: outputs may
 * be streams), ZIP64 records where a size or an offset needs them, and a fixed time stamp
 * (1980-01-01), so that the same arrays give the same bytes. Reading is zip-read.ts.
 * @module
 */
import { crc32 } from 'node:zlib';
import { crc32Combine } from './crc32-combine.js';

const U32 = 0xffffffff;
const U16 = 0xffff;

/** A writer of stored members (see the module doc): it makes every byte around their data and tracks positions. */
export class ZipWriter {
  private at = 0;
  private readonly dir: Uint8Array[] = [];
  private crc = 0;
  private entry: { name: Uint8Array; size: number; local: number; zip64: boolean; utf8: boolean } | null = null;

  /** The local header of a member of `size` bytes (data and all), starting where the last one ended. */
  begin(name: string, size: number): Uint8Array {
    const utf8 = /[^\x20-\x7e]/.test(name);
    const nameBytes = Buffer.from(name, 'utf8');
    const zip64 = size >= U32;
    const h = new DataView(new ArrayBuffer(30 + nameBytes.length + (zip64 ? 20 : 0)));
    h.setUint32(0, 0x04034b50, true);
    h.setUint16(4, zip64 ? 45 : 20, true);
    h.setUint16(6, 0x08 | (utf8 ? 0x800 : 0), true); // bit 3: sizes and CRC in a data descriptor
    h.setUint16(12, 0x21, true); // 1980-01-01
    h.setUint32(18, zip64 ? U32 : size, true);
    h.setUint32(22, zip64 ? U32 : size, true);
    h.setUint16(26, nameBytes.length, true);
    h.setUint16(28, zip64 ? 20 : 0, true);
    new Uint8Array(h.buffer).set(nameBytes, 30);
    if (zip64) {
      h.setUint16(30 + nameBytes.length, 1, true);
      h.setUint16(32 + nameBytes.length, 16, true);
      h.setBigUint64(34 + nameBytes.length, BigInt(size), true);
      h.setBigUint64(42 + nameBytes.length, BigInt(size), true);
    }
    this.entry = { name: nameBytes, size, local: this.at, zip64, utf8 };
    this.crc = 0;
    this.at += h.byteLength + size;
    return new Uint8Array(h.buffer);
  }

  /** Sees the member's bytes in order (its CRC-32). */
  data(bytes: Uint8Array): void {
    this.crc = crc32(bytes, this.crc);
  }

  /** Sees the member's next `length` bytes as their CRC-32 `crc` (computed elsewhere, in order). */
  dataCrc(crc: number, length: number): void {
    this.crc = crc32Combine(this.crc, crc, length);
  }

  /** The member's data descriptor; its central directory record is kept for {@link end}. */
  finish(): Uint8Array {
    const e = this.entry!;
    const d = new DataView(new ArrayBuffer(e.zip64 ? 24 : 16));
    d.setUint32(0, 0x08074b50, true);
    d.setUint32(4, this.crc >>> 0, true);
    if (e.zip64) {
      d.setBigUint64(8, BigInt(e.size), true);
      d.setBigUint64(16, BigInt(e.size), true);
    } else {
      d.setUint32(8, e.size, true);
      d.setUint32(12, e.size, true);
    }
    this.at += d.byteLength;
    const far = e.local >= U32;
    const extra = (e.zip64 ? 16 : 0) + (far ? 8 : 0);
    const c = new DataView(new ArrayBuffer(46 + e.name.length + (extra ? 4 + extra : 0)));
    c.setUint32(0, 0x02014b50, true);
    c.setUint16(4, (3 << 8) | 45, true); // made on Unix
    c.setUint16(6, e.zip64 || far ? 45 : 20, true);
    c.setUint16(8, 0x08 | (e.utf8 ? 0x800 : 0), true);
    c.setUint16(14, 0x21, true);
    c.setUint32(16, this.crc >>> 0, true);
    c.setUint32(20, e.zip64 ? U32 : e.size, true);
    c.setUint32(24, e.zip64 ? U32 : e.size, true);
    c.setUint16(28, e.name.length, true);
    c.setUint16(30, extra ? 4 + extra : 0, true);
    c.setUint32(38, 0o100644 << 16, true);
    c.setUint32(42, far ? U32 : e.local, true);
    new Uint8Array(c.buffer).set(e.name, 46);
    if (extra) {
      let f = 46 + e.name.length;
      c.setUint16(f, 1, true);
      c.setUint16(f + 2, extra, true);
      f += 4;
      if (e.zip64) {
        c.setBigUint64(f, BigInt(e.size), true);
        c.setBigUint64(f + 8, BigInt(e.size), true);
        f += 16;
      }
      if (far) c.setBigUint64(f, BigInt(e.local), true);
    }
    this.dir.push(new Uint8Array(c.buffer));
    return new Uint8Array(d.buffer);
  }

  /** The central directory and its end records (ZIP64 ones where needed). */
  end(): Uint8Array {
    const cdAt = this.at;
    const cdSize = this.dir.reduce((a, b) => a + b.length, 0);
    const n = this.dir.length;
    const zip64 = n >= U16 || cdAt >= U32 || cdSize >= U32;
    const tail = new DataView(new ArrayBuffer((zip64 ? 76 : 0) + 22));
    let p = 0;
    if (zip64) {
      tail.setUint32(0, 0x06064b50, true);
      tail.setBigUint64(4, 44n, true);
      tail.setUint16(12, (3 << 8) | 45, true);
      tail.setUint16(14, 45, true);
      tail.setBigUint64(24, BigInt(n), true);
      tail.setBigUint64(32, BigInt(n), true);
      tail.setBigUint64(40, BigInt(cdSize), true);
      tail.setBigUint64(48, BigInt(cdAt), true);
      tail.setUint32(56, 0x07064b50, true);
      tail.setBigUint64(64, BigInt(cdAt + cdSize), true);
      tail.setUint32(72, 1, true);
      p = 76;
    }
    tail.setUint32(p, 0x06054b50, true);
    tail.setUint16(p + 8, Math.min(n, U16), true);
    tail.setUint16(p + 10, Math.min(n, U16), true);
    tail.setUint32(p + 12, Math.min(cdSize, U32), true);
    tail.setUint32(p + 16, Math.min(cdAt, U32), true);
    const out = new Uint8Array(cdSize + tail.byteLength);
    let q = 0;
    for (const d of this.dir) {
      out.set(d, q);
      q += d.length;
    }
    out.set(new Uint8Array(tail.buffer), q);
    return out;
  }
}
