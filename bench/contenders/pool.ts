/**
 * The Worker pool (`createPool`) with N = 1 … cores threads, on plain Float32Arrays
 * (`pool-N`) and on views of the shared memory of the pool's build, the one the pool's
 * workers run on (`pool-N-zero-copy`). Calls return promises, so these are async tasks.
 * @module
 */
import * as lib from '../../dist/index.js';
import type { RmsNormPool as Pool } from '../../dist/index.js';
import type { Case, Contender, Instance } from '../types.js';
import { wasmBuffers } from './wasm-buffers.js';

type CreatePool = (o?: { threads?: number }) => Promise<Pool>;

function forward(p: Pool, c: Case, zc: boolean): Instance | Promise<Instance> {
  if (!zc) {
    const y = new Float32Array(c.x.length);
    const opts = { out: y, eps: c.eps };
    return { async: true, fn: () => p.rmsNorm(c.x, c.w, opts), outputs: () => ({ y }) };
  }
  return lib.loadRmsNorm(p.build).then((m) => {
    const b = wasmBuffers(m, { x: c.x, w: c.w, y: c.x.length });
    const { x, w, y } = b.views();
    const opts = { out: y, eps: c.eps };
    return { async: true, fn: () => p.rmsNorm(x, w, opts), outputs: () => ({ y: b.views().y.slice() }), dispose: b.free };
  });
}

function backward(p: Pool, c: Case, zc: boolean): Instance | Promise<Instance> {
  if (!zc) {
    const dx = new Float32Array(c.x.length);
    const dw = new Float32Array(c.dim);
    const opts = { dx, dweight: dw, eps: c.eps };
    return { async: true, fn: () => p.rmsNormBackward(c.dy, c.x, c.w, opts), outputs: () => ({ dx, dw }) };
  }
  return lib.loadRmsNorm(p.build).then((m) => {
    const b = wasmBuffers(m, { dy: c.dy, x: c.x, w: c.w, dx: c.x.length, dw: c.dim });
    const { dy, x, w, dx, dw } = b.views();
    const opts = { dx, dweight: dw, eps: c.eps };
    return {
      async: true,
      fn: () => p.rmsNormBackward(dy, x, w, opts),
      outputs: () => {
        const v = b.views();
        return { dx: v.dx.slice(), dw: v.dw.slice() };
      },
      dispose: b.free,
    };
  });
}

/** Pools by thread count, created on first use and shared by that count's contenders. */
export class Pools {
  private readonly pools = new Map<number, Promise<Pool>>();
  constructor(private readonly create: CreatePool = lib.createPool) {}

  get(threads: number): Promise<Pool> {
    let p = this.pools.get(threads);
    if (!p) this.pools.set(threads, (p = this.create({ threads })));
    return p;
  }

  /** Stops every pool's workers (they would keep the process alive). */
  async destroy(): Promise<void> {
    for (const p of this.pools.values()) await (await p).destroy();
    this.pools.clear();
  }
}

/** The pool contenders for N = 1 … `cores`, forward and backward, plain and zero-copy. */
export function poolContenders(pools: Pools, cores: number): Contender[] {
  const out: Contender[] = [];
  for (const op of ['forward', 'backward'] as const) {
    for (let n = 1; n <= cores; n++) {
      for (const zc of [false, true]) {
        out.push({
          name: `pool-${n}${zc ? '-zero-copy' : ''}`,
          family: 'pool',
          op,
          threads: n,
          zeroCopy: zc,
          note: zc ? 'simd-threads allocF32 views' : 'plain Float32Arrays',
          async make(c) {
            const p = await pools.get(n);
            if (p.mode !== 'threads') this.note = `pool mode '${p.mode}' (no workers)`;
            return op === 'forward' ? forward(p, c, zc) : backward(p, c, zc);
          },
        });
      }
    }
  }
  return out;
}
