/**
 * RMSNorm as a Node `Transform` stream, for pipelines: bytes of little-endian rows in (float32,
 * or float16 / bfloat16 with `dtype`), bytes of normalized rows of the same dtype out, in the
 * same order. Chunks of any size are accepted; a row cut between two chunks is carried to the
 * next. Rows are normalized with the sync API (`simd` build), a batch per incoming chunk,
 * through its fixed window: memory does not grow with the stream's length. The options are
 * checked once, when the stream is made; each batch is a call of those parameters.
 * @module
 */
import { Transform, type TransformCallback } from 'node:stream';
import { loadRmsNorm } from '../default-instance.js';
import type { RmsNorm } from '../rmsnorm.js';
import { DTYPES, KERNEL_DTYPES, listed, type Data } from '../glue/dtypes.js';
import { describe } from '../call/check/arrays.js';
import { F, FORWARD, forwardOf } from '../call/operations/forward.js';
import type { Params } from '../call/op.js';
import { paramOptions, FILE_PARAM_KEYS } from '../call/check/params.js';
import { options as checkOptions } from '../call/check/options.js';
import type { CastingMode, Dtype, FloatArray, ScalarOptions } from '../types.js';

/** Options of {@link createNormalizeStream}. */
export interface NormalizeStreamOptions extends ScalarOptions {
  /** Row length (elements). Default: `weight.length`; required without weight. */
  dim?: number;
  /**
   * The gain, `dim` elements, or null/absent for none: a Float32Array, a Float16Array, or a
   * Uint16Array of half bit patterns (what it holds: `weightDtype`, else `dtype`).
   */
  weight?: FloatArray | null;
  /** What the bytes are: a {@link Dtype} (default `'float32'`), little-endian. The output is the same. */
  dtype?: Dtype;
  /** The weight's dtype, as the sync API's option (default: from its type). */
  weightDtype?: Dtype;
  /** Where half results are rounded, as the sync API's option. Default `'none'`. */
  castingMode?: CastingMode;
}

const KEYS = [...FILE_PARAM_KEYS, 'weight'];


interface Settled {
  dim: number;
  /** The weight as the calls read it (half data as bits), or null. */
  weight: Data | null;
  dtype: Dtype;
  /** Every batch's call parameters, checked once when the stream was made. */
  params: Params;
}

class NormalizeStream extends Transform {
  private rn: RmsNorm | null = null;
  /** Bytes of an incomplete row carried from the last chunk. */
  private carry: Buffer = Buffer.alloc(0);
  private readonly rowBytes: number;
  private readonly item: number;

  constructor(private readonly o: Settled) {
    super();
    this.item = DTYPES[o.dtype].bytes;
    this.rowBytes = this.item * o.dim;
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    const run = (rn: RmsNorm) => {
      const data = this.carry.length ? Buffer.concat([this.carry, chunk]) : chunk;
      const whole = data.length - (data.length % this.rowBytes);
      this.carry = Buffer.from(data.subarray(whole));
      if (whole > 0) {
        // A copy aligned for the typed array (a Buffer's offset may be odd), normalized in place.
        const x = new DTYPES[this.o.dtype].Array(whole / this.item) as Data;
        new Uint8Array(x.buffer).set(data.subarray(0, whole));
        rn.runChecked('normalize stream', FORWARD.call(forwardOf(this.o.params, x, this.o.weight, x, null, null)));
        this.push(Buffer.from(x.buffer, 0, whole));
      }
      done();
    };
    try {
      if (this.rn) run(this.rn);
      else
        loadRmsNorm('simd').then(
          (rn) => {
            this.rn = rn;
            try {
              run(rn);
            } catch (e) {
              done(e as Error);
            }
          },
          (e: unknown) => done(e as Error),
        );
    } catch (e) {
      done(e as Error);
    }
  }

  override _flush(done: TransformCallback): void {
    if (this.carry.length) {
      done(new RangeError(`normalize stream: the input ended mid-row (${this.carry.length} bytes left over; rows are ${this.rowBytes} bytes)`));
    } else done();
  }
}

/**
 * A Transform that normalizes little-endian rows of `dim` elements of `dtype` (default
 * float32); see the module doc.
 * @throws TypeError / RangeError on bad options (checked as `rmsNorm` checks them); the stream
 *   errors with a RangeError if its input ends mid-row.
 */
export function createNormalizeStream(options: NormalizeStreamOptions): Transform {
  const o = checkOptions('createNormalizeStream', options, KEYS) as NormalizeStreamOptions;
  const weight = o.weight ?? null;
  // The sync API's checks (dtype and weightDtype among them), on no rows.
  const dtype = o.dtype ?? 'float32';
  if (!KERNEL_DTYPES.includes(dtype)) throw new TypeError(`createNormalizeStream: options.dtype must be ${listed(KERNEL_DTYPES)}, got ${describe(dtype)}`);
  const given = { ...paramOptions(o as Record<string, unknown>), dtype };
  const a = FORWARD.check('createNormalizeStream', new DTYPES[dtype].Array(0) as FloatArray, weight, given, undefined);
  return new NormalizeStream({ dim: a.dim, weight: a.arrs[F.weight] as Data | null, dtype, params: a.params });
}
