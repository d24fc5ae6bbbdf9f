/**
 * RMSNorm as a Node `Transform` stream, for pipelines: bytes of little-endian float32 rows in,
 * bytes of normalized rows out, in the same order. Chunks of any size are accepted; a row cut
 * between two chunks is carried to the next. Rows are normalized with the sync API (`simd`
 * build), a batch per incoming chunk, through its fixed window: memory does not grow with the
 * stream's length.
 * @module
 */
import { Transform, type TransformCallback } from 'node:stream';
import { loadRmsNorm, type RmsNorm } from '../index.js';
import { checkForward, describe, options as checkOptions } from '../validate.js';

/** Options of {@link createNormalizeStream}. */
export interface NormalizeStreamOptions {
  /** Row length (floats). Default: `weight.length`; required without weight. */
  dim?: number;
  /** The gain, `dim` floats, or null/absent for none. */
  weight?: Float32Array | null;
  /** Inside the root. Default 1e-6. */
  eps?: number;
  /** Added to the weight. Default 0. */
  offset?: number;
  /** pRMSNorm's fraction, (0, 1]. Default 1. */
  partial?: number;
}

const KEYS = ['dim', 'weight', 'eps', 'offset', 'partial'];

class NormalizeStream extends Transform {
  private rn: RmsNorm | null = null;
  /** Bytes of an incomplete row carried from the last chunk. */
  private carry: Buffer = Buffer.alloc(0);
  private readonly rowBytes: number;

  constructor(private readonly o: { dim: number; weight: Float32Array | null; eps?: number; offset?: number; partial?: number }) {
    super();
    this.rowBytes = 4 * o.dim;
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    const run = (rn: RmsNorm) => {
      const data = this.carry.length ? Buffer.concat([this.carry, chunk]) : chunk;
      const whole = data.length - (data.length % this.rowBytes);
      this.carry = Buffer.from(data.subarray(whole));
      if (whole > 0) {
        // A copy aligned for Float32Array (a Buffer's offset may be odd), normalized in place.
        const x = new Float32Array(whole / 4);
        new Uint8Array(x.buffer).set(data.subarray(0, whole));
        const { dim, weight, eps, offset, partial } = this.o;
        rn.rmsNorm(x, weight, { dim, eps, offset, partial, out: x });
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
 * A Transform that normalizes little-endian float32 rows of `dim`; see the module doc.
 * @throws TypeError / RangeError on bad options (checked as `rmsNorm` checks them); the stream
 *   errors with a RangeError if its input ends mid-row.
 */
export function createNormalizeStream(options: NormalizeStreamOptions): Transform {
  const o = checkOptions('createNormalizeStream', options, KEYS) as NormalizeStreamOptions;
  if (o.weight !== undefined && o.weight !== null && !(o.weight instanceof Float32Array)) {
    throw new TypeError(`createNormalizeStream: options.weight must be a Float32Array or null, got ${describe(o.weight)}`);
  }
  const weight = o.weight ?? null;
  const a = checkForward('createNormalizeStream', new Float32Array(0), weight, {
    dim: o.dim,
    eps: o.eps,
    offset: o.offset,
    partial: o.partial,
  });
  return new NormalizeStream({ dim: a.dim, weight, eps: o.eps, offset: o.offset, partial: o.partial });
}
