/**
 * CRC-32 of two pieces from the CRC-32 of each: lets the chunks of one zip member be
 * checksummed by different threads and combined in order.
 * @module
 */

/** `mat` (32 columns of a GF(2) matrix) times the bit vector `vec`. */
function gf2Times(mat: Uint32Array, vec: number): number {
  let sum = 0;
  for (let i = 0; vec !== 0; i++, vec >>>= 1) if (vec & 1) sum ^= mat[i]!;
  return sum >>> 0;
}

/** `sq = mat · mat`. */
function gf2Square(sq: Uint32Array, mat: Uint32Array): void {
  for (let n = 0; n < 32; n++) sq[n] = gf2Times(mat, mat[n]!);
}

/**
 * The CRC-32 of `A` then `B` from the CRC-32 `a` of A, `b` of B and B's length (zlib's
 * `crc32_combine`: `a` advanced over `lenB` zero bytes by repeated squaring of the one-zero-bit
 * operator, then `b` added). Lets chunks of one member be checksummed by different threads.
 */
export function crc32Combine(a: number, b: number, lenB: number): number {
  if (lenB <= 0) return a >>> 0;
  const even = new Uint32Array(32);
  const odd = new Uint32Array(32);
  odd[0] = 0xedb88320; // the CRC-32 polynomial: the operator of one zero bit
  for (let n = 1, row = 1; n < 32; n++, row <<= 1) odd[n] = row >>> 0;
  gf2Square(even, odd); // two zero bits
  gf2Square(odd, even); // four
  let crc = a >>> 0;
  let len = lenB;
  // Apply the operator of 2^k zero bytes for each bit k of the length (8 bits the first time).
  for (;;) {
    gf2Square(even, odd);
    if (len % 2) crc = gf2Times(even, crc);
    len = Math.floor(len / 2);
    if (len === 0) break;
    gf2Square(odd, even);
    if (len % 2) crc = gf2Times(odd, crc);
    len = Math.floor(len / 2);
    if (len === 0) break;
  }
  return (crc ^ b) >>> 0;
}
