// Every kind of bad argument: the error class (TypeError for a wrong kind of value, RangeError
// for a right kind with a wrong size or value), a message naming the function and the argument,
// nothing written to any array passed (outputs pre-filled with a sentinel keep it), and a
// correct call right after still working.
import { beforeAll, describe, expect, it } from 'vitest';
import { loadRmsNorm, type F32Buffer, type RmsNorm } from '../dist/index.js';
import { allclose, firstBitDiff, mismatch, randn, refBackward, refForward, testWeight, yTolerance } from '../shared/reference.js';
import { thrown } from './thrown.js';

const ROWS = 4;
const DIM = 8;
const N = ROWS * DIM;
const SENTINEL = Math.fround(-12345.678);

/** Arrays for one call; every one is recorded with a copy, so any write can be detected. */
class Ctx {
  private readonly seen: [string, Float32Array, Float32Array][] = [];
  private next = 0;
  constructor(
    private readonly pool: Float32Array | null, // a wasm view to carve from, or null for plain arrays
    private readonly label: string,
  ) {}

  private reg(name: string, a: Float32Array): Float32Array {
    this.seen.push([name, a, a.slice()]);
    return a;
  }

  /** `n` floats: a sentinel-filled output, or (with `values`) an input. */
  arr(n: number, name: string, values?: Float32Array): Float32Array {
    let a: Float32Array;
    if (this.pool) {
      a = this.pool.subarray(this.next, this.next + n);
      this.next += n + 3; // odd gaps: the arrays do not touch each other
    } else {
      a = new Float32Array(n);
    }
    if (values) a.set(values);
    else a.fill(SENTINEL);
    return this.reg(name, a);
  }

  readonly x = () => this.arr(N, 'x', randn(N, 1));
  readonly dy = () => this.arr(N, 'dy', randn(N, 2));
  readonly w = () => this.arr(DIM, 'weight', testWeight(DIM, 3));

  /** Names of recorded arrays whose contents changed. */
  changed(): string[] {
    return this.seen.filter(([, a, copy]) => firstBitDiff(a, copy) !== -1).map(([n]) => `${this.label}:${n}`);
  }
}

type ErrorClass = typeof TypeError | typeof RangeError;
interface Bad {
  what: string;
  cls: ErrorClass;
  /** Substrings the message must contain (the argument's name, ...). */
  names: string[];
  call: (m: RmsNorm, c: Ctx) => unknown;
}

// Forward calls, each wrong in exactly one way.
const FORWARD: Bad[] = [
  { what: 'x Float64Array', cls: TypeError, names: ['x must be a Float32Array', 'Float64Array'], call: (m, c) => m.rmsNorm(new Float64Array(N) as never, c.w(), { out: c.arr(N, 'out') }) },
  { what: 'x plain array', cls: TypeError, names: ['x must be a Float32Array', 'Array(32)'], call: (m, c) => m.rmsNorm(Array.from(c.x()) as never, c.w(), { out: c.arr(N, 'out') }) },
  { what: 'x null', cls: TypeError, names: ['x must be a Float32Array', 'null'], call: (m, c) => m.rmsNorm(null as never, c.w(), { out: c.arr(N, 'out') }) },
  { what: 'x undefined', cls: TypeError, names: ['x must be a Float32Array'], call: (m, c) => m.rmsNorm(undefined as never, c.w()) },
  { what: 'x Uint32Array', cls: TypeError, names: ['x must be a Float32Array', 'Uint32Array'], call: (m, c) => m.rmsNorm(new Uint32Array(N) as never, c.w()) },
  { what: 'weight Float64Array', cls: TypeError, names: ['weight must be a Float32Array'], call: (m, c) => m.rmsNorm(c.x(), new Float64Array(DIM) as never, { out: c.arr(N, 'out') }) },
  { what: 'weight plain array', cls: TypeError, names: ['weight must be a Float32Array'], call: (m, c) => m.rmsNorm(c.x(), [1, 2, 3, 4] as never, { dim: 4 }) },
  { what: 'weight of wrong length (dim given)', cls: RangeError, names: ['weight.length (7)', 'options.dim (8)'], call: (m, c) => m.rmsNorm(c.x(), c.arr(7, 'w7', new Float32Array(7).fill(1)), { dim: DIM, out: c.arr(N, 'out') }) },
  { what: 'weight of length 0', cls: RangeError, names: ['weight.length'], call: (m, c) => m.rmsNorm(c.x(), new Float32Array(0), { out: c.arr(N, 'out') }) },
  { what: 'weight length not dividing x', cls: RangeError, names: ['x.length (32)', 'dim (5)'], call: (m, c) => m.rmsNorm(c.x(), c.arr(5, 'w5', new Float32Array(5).fill(1)), { out: c.arr(N, 'out') }) },
  { what: 'out of wrong length', cls: RangeError, names: ['options.out.length', '32', '31'], call: (m, c) => m.rmsNorm(c.x(), c.w(), { out: c.arr(N - 1, 'out31') }) },
  { what: 'out too long', cls: RangeError, names: ['options.out.length'], call: (m, c) => m.rmsNorm(c.x(), c.w(), { out: c.arr(N + 1, 'out33') }) },
  { what: 'out Float64Array', cls: TypeError, names: ['options.out must be a Float32Array'], call: (m, c) => m.rmsNorm(c.x(), c.w(), { out: new Float64Array(N) as never }) },
  { what: 'rstd of wrong length', cls: RangeError, names: ['options.rstd.length', '4'], call: (m, c) => m.rmsNorm(c.x(), c.w(), { out: c.arr(N, 'out'), rstd: c.arr(ROWS + 1, 'rstd5') }) },
  { what: 'rstd plain array', cls: TypeError, names: ['options.rstd must be a Float32Array'], call: (m, c) => m.rmsNorm(c.x(), c.w(), { out: c.arr(N, 'out'), rstd: [0, 0, 0, 0] as never }) },
  { what: 'dim missing with null weight', cls: TypeError, names: ['options.dim is required'], call: (m, c) => m.rmsNorm(c.x(), null, { out: c.arr(N, 'out') }) },
  { what: 'no options at all with null weight', cls: TypeError, names: ['options.dim is required'], call: (m, c) => m.rmsNorm(c.x(), null) },
  ...[0, -1, 1.5, NaN, Infinity, -Infinity, 2 ** 33].map((dim) => ({
    what: `dim ${dim}`,
    cls: RangeError,
    names: ['options.dim must be a positive integer', String(dim)],
    call: (m: RmsNorm, c: Ctx) => m.rmsNorm(c.x(), null, { dim, out: c.arr(N, 'out'), rstd: c.arr(ROWS, 'rstd') }),
  })),
  { what: 'dim string', cls: TypeError, names: ['options.dim must be a number', 'string "8"'], call: (m, c) => m.rmsNorm(c.x(), null, { dim: '8' as never, out: c.arr(N, 'out') }) },
  { what: 'dim null', cls: TypeError, names: ['options.dim must be a number'], call: (m, c) => m.rmsNorm(c.x(), null, { dim: null as never, out: c.arr(N, 'out') }) },
  { what: 'x.length not a multiple of dim', cls: RangeError, names: ['x.length (32)', 'multiple of dim (5)'], call: (m, c) => m.rmsNorm(c.x(), null, { dim: 5, out: c.arr(N, 'out') }) },
  ...[-1e-6, -Infinity, NaN, Infinity, 1e39, 3.5e38].map((eps) => ({
    what: `eps ${eps}`,
    cls: RangeError,
    names: ['options.eps must be >= 0 and finite as a float32', String(eps)],
    call: (m: RmsNorm, c: Ctx) => m.rmsNorm(c.x(), c.w(), { eps, out: c.arr(N, 'out'), rstd: c.arr(ROWS, 'rstd') }),
  })),
  { what: 'eps string', cls: TypeError, names: ['options.eps must be a number'], call: (m, c) => m.rmsNorm(c.x(), c.w(), { eps: '1e-6' as never, out: c.arr(N, 'out') }) },
  { what: 'eps bigint', cls: TypeError, names: ['options.eps must be a number'], call: (m, c) => m.rmsNorm(c.x(), c.w(), { eps: 1n as never, out: c.arr(N, 'out') }) },
  { what: 'unknown option key', cls: TypeError, names: ['unknown option "epsilon"', 'known: dim, eps, offset, partial, dtype, weightDtype, castingMode, gateMode, outDtype, quantScale, residual, out, residualOut, rstd, gate, rowScales'], call: (m, c) => m.rmsNorm(c.x(), c.w(), { epsilon: 1e-5, out: c.arr(N, 'out') } as never) },
  { what: "backward's option in forward", cls: TypeError, names: ['unknown option "dx"'], call: (m, c) => m.rmsNorm(c.x(), c.w(), { dx: c.arr(N, 'dx') } as never) },
  { what: 'options a number', cls: TypeError, names: ['options must be an object'], call: (m, c) => m.rmsNorm(c.x(), c.w(), 5 as never) },
  { what: 'options an array', cls: TypeError, names: ['options must be an object'], call: (m, c) => m.rmsNorm(c.x(), c.w(), [] as never) },
  { what: 'options a Map', cls: TypeError, names: ['options must be a plain object', 'Map'], call: (m, c) => m.rmsNorm(c.x(), c.w(), new Map([['eps', 1e-5]]) as never) },
  {
    what: 'out and rstd overlapping',
    cls: RangeError,
    names: ['options.out and options.rstd must not overlap'],
    call: (m, c) => {
      const both = c.arr(N + 2, 'out+rstd');
      return m.rmsNorm(c.x(), c.w(), { out: both.subarray(0, N), rstd: both.subarray(N - 2, N + 2) });
    },
  },
  {
    what: 'x detached (transferred)',
    cls: TypeError,
    names: ['x is a view of a detached ArrayBuffer'],
    call: (m, c) => {
      const x = new Float32Array(N);
      structuredClone(x.buffer, { transfer: [x.buffer] });
      return m.rmsNorm(x, c.w(), { out: c.arr(N, 'out') });
    },
  },
];

// Backward calls, each wrong in exactly one way.
const BACKWARD: Bad[] = [
  { what: 'dy Float64Array', cls: TypeError, names: ['dy must be a Float32Array', 'Float64Array(32)'], call: (m, c) => m.rmsNormBackward(new Float64Array(N) as never, c.x(), c.w(), { dx: c.arr(N, 'dx'), dweight: c.arr(DIM, 'dw') }) },
  { what: 'dy null', cls: TypeError, names: ['dy must be a Float32Array', 'null'], call: (m, c) => m.rmsNormBackward(null as never, c.x(), c.w(), { dx: c.arr(N, 'dx') }) },
  { what: 'x plain array', cls: TypeError, names: ['x must be a Float32Array'], call: (m, c) => m.rmsNormBackward(c.dy(), Array.from(c.x()) as never, c.w(), { dx: c.arr(N, 'dx'), dweight: c.arr(DIM, 'dw') }) },
  { what: 'x null', cls: TypeError, names: ['x must be a Float32Array'], call: (m, c) => m.rmsNormBackward(c.dy(), null as never, c.w(), { dx: c.arr(N, 'dx') }) },
  { what: 'weight Float64Array', cls: TypeError, names: ['weight must be a Float32Array'], call: (m, c) => m.rmsNormBackward(c.dy(), c.x(), new Float64Array(DIM) as never, { dx: c.arr(N, 'dx') }) },
  { what: 'dy and x of different lengths', cls: RangeError, names: ['dy.length (24)', 'x.length (32)'], call: (m, c) => m.rmsNormBackward(c.arr(N - DIM, 'dy24', randn(N - DIM, 5)), c.x(), c.w(), { dx: c.arr(N, 'dx'), dweight: c.arr(DIM, 'dw') }) },
  { what: 'weight of wrong length', cls: RangeError, names: ['weight.length (9)', 'options.dim (8)'], call: (m, c) => m.rmsNormBackward(c.dy(), c.x(), c.arr(9, 'w9', new Float32Array(9)), { dim: DIM, dx: c.arr(N, 'dx'), dweight: c.arr(9, 'dw9') }) },
  { what: 'dx of wrong length', cls: RangeError, names: ['options.dx.length', '32'], call: (m, c) => m.rmsNormBackward(c.dy(), c.x(), c.w(), { dx: c.arr(N - 1, 'dx31'), dweight: c.arr(DIM, 'dw') }) },
  { what: 'dx Float64Array', cls: TypeError, names: ['options.dx must be a Float32Array'], call: (m, c) => m.rmsNormBackward(c.dy(), c.x(), c.w(), { dx: new Float64Array(N) as never, dweight: c.arr(DIM, 'dw') }) },
  { what: 'dweight of wrong length', cls: RangeError, names: ['options.dweight.length', '8'], call: (m, c) => m.rmsNormBackward(c.dy(), c.x(), c.w(), { dx: c.arr(N, 'dx'), dweight: c.arr(DIM - 1, 'dw7') }) },
  { what: 'dweight given with null weight', cls: TypeError, names: ['options.dweight', 'weight is null'], call: (m, c) => m.rmsNormBackward(c.dy(), c.x(), null, { dim: DIM, dx: c.arr(N, 'dx'), dweight: c.arr(DIM, 'dw') }) },
  { what: 'rstd of wrong length', cls: RangeError, names: ['options.rstd.length', '4'], call: (m, c) => m.rmsNormBackward(c.dy(), c.x(), c.w(), { rstd: c.arr(ROWS - 1, 'rstd3', new Float32Array(3).fill(1)), dx: c.arr(N, 'dx'), dweight: c.arr(DIM, 'dw') }) },
  { what: 'dim missing with null weight', cls: TypeError, names: ['options.dim is required'], call: (m, c) => m.rmsNormBackward(c.dy(), c.x(), null, { dx: c.arr(N, 'dx') }) },
  ...[0, -1, 1.5, NaN].map((dim) => ({
    what: `dim ${dim}`,
    cls: RangeError,
    names: ['options.dim must be a positive integer'],
    call: (m: RmsNorm, c: Ctx) => m.rmsNormBackward(c.dy(), c.x(), null, { dim, dx: c.arr(N, 'dx') }),
  })),
  { what: 'dim string', cls: TypeError, names: ['options.dim must be a number'], call: (m, c) => m.rmsNormBackward(c.dy(), c.x(), null, { dim: '8' as never, dx: c.arr(N, 'dx') }) },
  { what: 'x.length not a multiple of dim', cls: RangeError, names: ['x.length (32)', 'multiple of dim (3)'], call: (m, c) => m.rmsNormBackward(c.dy(), c.x(), null, { dim: 3, dx: c.arr(N, 'dx') }) },
  ...[-1, NaN, Infinity, 1e39].map((eps) => ({
    what: `eps ${eps}`,
    cls: RangeError,
    names: ['options.eps must be >= 0 and finite as a float32'],
    call: (m: RmsNorm, c: Ctx) => m.rmsNormBackward(c.dy(), c.x(), c.w(), { eps, dx: c.arr(N, 'dx'), dweight: c.arr(DIM, 'dw') }),
  })),
  { what: 'eps string', cls: TypeError, names: ['options.eps must be a number'], call: (m, c) => m.rmsNormBackward(c.dy(), c.x(), c.w(), { eps: '0' as never, dx: c.arr(N, 'dx'), dweight: c.arr(DIM, 'dw') }) },
  { what: "forward's option in backward", cls: TypeError, names: ['unknown option "out"', 'known: dim, eps, offset, partial, dtype, weightDtype, castingMode, gateMode, rstd, dresidual, dx, dweight, gate, dgate'], call: (m, c) => m.rmsNormBackward(c.dy(), c.x(), c.w(), { out: c.arr(N, 'out'), dweight: c.arr(DIM, 'dw') } as never) },
  {
    what: 'dx and dweight overlapping',
    cls: RangeError,
    names: ['options.dx and options.dweight must not overlap'],
    call: (m, c) => {
      const both = c.arr(N + 4, 'dx+dw');
      return m.rmsNormBackward(c.dy(), c.x(), c.w(), { dx: both.subarray(0, N), dweight: both.subarray(N - 4, N + 4) });
    },
  },
];


describe.each(['simd', 'simd-threads'] as const)('%s build: bad arguments', (build) => {
  let m: RmsNorm;
  let poolBuf: F32Buffer;
  // a fresh view each time: a call on plain arrays may grow memory (scratch), which detaches
  // older views of the simd build's non-shared memory
  const pool = () => poolBuf.view();
  beforeAll(async () => {
    m = await loadRmsNorm(build);
    // one allocation up front for the wasm-view variants: carving views from it never grows
    // memory, so no view is invalidated halfway through a case
    poolBuf = m.allocF32(4096);
  });

  // After each bad call: a correct one with fresh arrays of the same kind works.
  function correctForward(c: Ctx) {
    const x = c.x();
    const w = c.w();
    const out = c.arr(N, 'good out');
    const rstd = c.arr(ROWS, 'good rstd');
    expect(m.rmsNorm(x, w, { out, rstd })).toBe(out);
    expect(mismatch(out, refForward(x, w, DIM, 1e-6).y, yTolerance)).toBeNull();
  }
  function correctBackward(c: Ctx) {
    const [dy, x, w] = [c.dy(), c.x(), c.w()];
    const dx = c.arr(N, 'good dx');
    const dweight = c.arr(DIM, 'good dweight');
    const r = m.rmsNormBackward(dy, x, w, { dx, dweight });
    expect(r.dx).toBe(dx);
    expect(r.dweight).toBe(dweight);
    const ref = refBackward(dy, x, w, DIM, 1e-6);
    expect(mismatch(dx, ref.dx, allclose(1e-5, 1e-5))).toBeNull();
    expect(mismatch(dweight, ref.dweight!, allclose(1e-5, 1e-5))).toBeNull();
  }

  for (const [fn, table, correct] of [
    ['rmsNorm', FORWARD, correctForward],
    ['rmsNormBackward', BACKWARD, correctBackward],
  ] as const) {
    for (const arrays of ['plain arrays', 'wasm views'] as const) {
      it.each(table)(`${fn}, ${arrays}: $what`, ({ cls, names, call }) => {
        const c = new Ctx(arrays === 'wasm views' ? pool() : null, arrays);
        const err = thrown(() => call(m, c));
        expect(err.constructor, err.message).toBe(cls);
        expect(err.message.startsWith(`${fn}: `), err.message).toBe(true);
        for (const n of names) expect(err.message).toContain(n);
        expect(c.changed()).toEqual([]);
        pool().fill(0);
        correct(new Ctx(arrays === 'wasm views' ? pool() : null, arrays));
      });
    }
  }

  it('the write detector itself sees a single changed float (plain and view)', () => {
    for (const c of [new Ctx(null, 'plain'), new Ctx(pool(), 'view')]) {
      const out = c.arr(N, 'out');
      c.x();
      expect(c.changed()).toEqual([]);
      out[N - 1] = 0;
      expect(c.changed()).toEqual([expect.stringContaining('out')]);
    }
  });

  it('allocF32 rejects bad lengths with a RangeError naming it, and non-numbers with a TypeError', () => {
    for (const n of [-1, 1.5, NaN, 2 ** 30]) {
      const err = thrown(() => m.allocF32(n));
      expect(err).toBeInstanceOf(RangeError);
      expect(err.message).toMatch(/^allocF32: length/);
    }
    const err = thrown(() => m.allocF32('4' as never));
    expect(err).toBeInstanceOf(TypeError);
    expect(err.message).toMatch(/^allocF32: length must be a number/);
  });

  it('a view used after free() throws', () => {
    const b = m.allocF32(8);
    b.view();
    b.free();
    expect(() => b.view()).toThrow(/after free/);
    expect(() => b.free()).toThrow(/free\(\) called twice/);
    expect(() => b[Symbol.dispose]()).not.toThrow(); // disposing a freed buffer is a no-op
  });

  it('`using` frees the buffer at the end of its block', () => {
    const before = m.allocF32(64);
    const at = before.view().byteOffset;
    before.free();
    {
      using b = m.allocF32(64);
      expect(b.view().byteOffset).toBe(at); // the allocator hands the same block back
    }
    // Freed by the block's end: the next allocation of that size reuses it again.
    const again = m.allocF32(64);
    expect(again.view().byteOffset).toBe(at);
    again.free();
  });

  it('zero rows are allowed: empty x gives an empty result and a zero dweight', () => {
    expect(m.rmsNorm(new Float32Array(0), testWeight(4, 1)).length).toBe(0);
    const dweight = new Float32Array(4).fill(SENTINEL);
    const r = m.rmsNormBackward(new Float32Array(0), new Float32Array(0), testWeight(4, 1), { dweight });
    expect(r.dx.length).toBe(0);
    expect(Array.from(dweight)).toEqual([0, 0, 0, 0]);
  });
});
