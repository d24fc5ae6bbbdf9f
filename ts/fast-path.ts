/**
 * The zero-copy float32 forward without the general machinery: when `x`, the weight and
 * `options.out` (and `options.rstd`) are all float32 views of the instance's current memory,
 * apart from each other or `out` exactly `x`, and the options are only those and `eps`, the
 * call needs no placement, no window and no copies — only its call block and the kernel.
 * Recognized by positive checks; anything else (including anything the general path would
 * reject) returns undefined and goes the general way, which checks everything and says what
 * is wrong. Same kernel, same addresses as the general path would use: the same bits.
 *
 * It exists for the per-token calls of a model on wasm memory (one row of ~1000 floats takes
 * the kernel ~0.15 µs), where the general path's checks and placement cost twice the kernel.
 * Reading a view's `buffer` or `byteOffset` costs ~12 ns in Node 20, so the last views seen
 * are remembered with their addresses: a view's buffer and offset never change, and a view of
 * memory that grew since is detached (length 0), which the length check below catches.
 * @module
 */
import { writeParamsBlock, type PARAMS } from './abi.js';
import { ADDRS_AT, F, FORWARD } from './ops.js';
import type { KernelExports } from './load.js';
import { checkStatus } from './status.js';

/** The last views seen in one operand position, and their byte addresses. */
class Seen {
  /** Starts as no value any call can pass (`null` and `undefined` are values callers pass). */
  view: unknown = Seen;
  at = 0;

  /** `a`'s byte address if it is a Float32Array view of `buf` with elements, else -1. */
  addressOf(a: unknown, buf: ArrayBufferLike): number {
    if (a === this.view) return (a as Float32Array).length !== 0 ? this.at : -1;
    if (!(a instanceof Float32Array) || a.buffer !== buf || a.length === 0) return -1;
    this.view = a;
    this.at = a.byteOffset;
    return this.at;
  }
}

/** Whether `[a, a + an)` and `[b, b + bn)` (bytes) share none. */
const apart = (a: number, an: number, b: number, bn: number) => a + an <= b || b + bn <= a;

/** See the module doc; one per instance. */
export class FastForward {
  private readonly x = new Seen();
  private readonly w = new Seen();
  private readonly out = new Seen();
  private readonly rstd = new Seen();
  /** The parameters of a plain float32 forward, rewritten per call (no allocation). */
  private readonly q: { -readonly [K in keyof typeof PARAMS]: number } = { dim: 0, stat: 0, eps: 0, offset: 0, dtypes: 0, gate: 0 };

  constructor(
    private readonly k: KernelExports,
    /** The instance's call block (byte address). */
    private readonly callAt: number,
  ) {}

  /**
   * Runs `rmsNorm(x, weight, options)` the fast way if it qualifies and returns `options.out`;
   * otherwise returns undefined having done nothing. `i32` / `f32`: views of the whole memory.
   */
  run(i32: Int32Array, f32: Float32Array, x: unknown, weight: unknown, options: unknown): Float32Array | undefined {
    if (typeof options !== 'object' || options === null || Object.getPrototypeOf(options) !== Object.prototype) return undefined;
    const o = options as { out?: unknown; eps?: unknown; rstd?: unknown };
    for (const key in o) if (key !== 'out' && key !== 'eps' && key !== 'rstd') return undefined;
    const buf = f32.buffer;
    const xa = this.x.addressOf(x, buf);
    const wa = this.w.addressOf(weight, buf);
    const ya = this.out.addressOf(o.out, buf);
    if (xa < 0 || wa < 0 || ya < 0) return undefined;
    const xv = x as Float32Array;
    const wv = weight as Float32Array;
    const yv = o.out as Float32Array;
    const dim = wv.length;
    const n = xv.length;
    if (n % dim !== 0 || yv.length !== n) return undefined;
    const rows = n / dim;
    const e = o.eps === undefined ? 1e-6 : o.eps;
    if (typeof e !== 'number' || !(e >= 0) || !Number.isFinite(Math.fround(e))) return undefined;
    if ((ya !== xa && !apart(ya, 4 * n, xa, 4 * n)) || !apart(ya, 4 * n, wa, 4 * dim)) return undefined;
    let ra = 0;
    if (o.rstd !== undefined) {
      ra = this.rstd.addressOf(o.rstd, buf);
      if (ra < 0 || (o.rstd as Float32Array).length !== rows) return undefined;
      if (!apart(ra, 4 * rows, xa, 4 * n) || !apart(ra, 4 * rows, ya, 4 * n) || !apart(ra, 4 * rows, wa, 4 * dim)) return undefined;
    }
    const q = this.q;
    q.dim = dim;
    q.stat = dim;
    q.eps = e;
    const at = this.callAt >>> 2;
    writeParamsBlock(i32, f32, at, q);
    const a = at + ADDRS_AT / 4;
    for (let i = 0; i < FORWARD.addrs; i++) i32[a + i] = 0; // every operand absent but these:
    i32[a + F.x] = xa;
    i32[a + F.weight] = wa;
    i32[a + F.y] = ya;
    i32[a + F.rstd] = ra;
    checkStatus('rmsNorm', this.k.rms_norm_forward(this.callAt, this.callAt + ADDRS_AT, 0, rows));
    return yv;
  }
}
