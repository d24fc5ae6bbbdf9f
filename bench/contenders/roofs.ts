/**
 * What the package is measured against besides the alternatives a user has:
 * - `roof-copy`, `roof-two-pass` (forward and backward): the hand-written WebAssembly of
 *   bench/roofs/roofs.wat — the same memory traffic and arithmetic as the package's kernels, in
 *   their summation order, with nothing else (no checks, no dispatch): the "% roof" column.
 * - `rten-vecmath`: a Rust peer, rten's RMSNormalization (rten-vecmath 0.27 `SumSquare`, then
 *   `Normalize` with the gain), built by build.sh with the package's toolchain and +simd128
 *   (bench/rten-peer), called as a raw export on its own memory.
 * Every call is zero-copy: inputs are placed in the module's memory once.
 * @module
 */
import { readFile } from 'node:fs/promises';
import { roofs } from '../roofs.js';
import type { Case, Contender } from '../types.js';

/** The roofs' contenders: copy, forward and backward. */
export async function roofContenders(): Promise<Contender[]> {
  const r = await roofs();
  return [
    {
      name: 'roof-copy', family: 'roof', op: 'copy', threads: 1, zeroCopy: true, note: 'bench/roofs/roofs.wat copy: v128, 64 bytes per iteration',
      make(c: Case) {
        r.reset();
        const n = c.x.length;
        const [src, dst] = [r.alloc(4 * n), r.alloc(4 * n)];
        r.f32(src, n).set(c.x);
        return { async: false, fn: () => r.k.copy(src, dst, 4 * n), outputs: () => ({ y: r.f32(dst, n).slice() }) };
      },
    },
    {
      name: 'roof-two-pass', family: 'roof', op: 'forward', threads: 1, zeroCopy: true, note: 'bench/roofs/roofs.wat fwd_f32: the package\'s passes and order in hand-written wasm',
      make(c: Case) {
        r.reset();
        const n = c.x.length;
        const [x, w, y] = [r.alloc(4 * n), r.alloc(4 * c.dim), r.alloc(4 * n)];
        r.f32(x, n).set(c.x);
        r.f32(w, c.dim).set(c.w);
        return { async: false, fn: () => r.k.fwd_f32(x, w, y, c.rows, c.dim, c.eps), outputs: () => ({ y: r.f32(y, n).slice() }) };
      },
    },
    {
      name: 'roof-two-pass', family: 'roof', op: 'backward', threads: 1, zeroCopy: true, note: 'bench/roofs/roofs.wat bwd_f32: the package\'s passes and order in hand-written wasm',
      make(c: Case) {
        r.reset();
        const n = c.x.length;
        const [dy, x, w, dx, dw, work] = [r.alloc(4 * n), r.alloc(4 * n), r.alloc(4 * c.dim), r.alloc(4 * n), r.alloc(4 * c.dim), r.alloc(12 * c.dim)];
        r.f32(dy, n).set(c.dy);
        r.f32(x, n).set(c.x);
        r.f32(w, c.dim).set(c.w);
        return {
          async: false,
          fn: () => r.k.bwd_f32(dy, x, w, dx, dw, work, c.rows, c.dim, c.eps),
          outputs: () => ({ dx: r.f32(dx, n).slice(), dw: r.f32(dw, c.dim).slice() }),
        };
      },
    },
  ];
}

/** The rten peer's raw exports. */
interface RtenExports {
  memory: WebAssembly.Memory;
  alloc_f32(len: number): number;
  rms_norm(x: number, w: number, y: number, rows: number, dim: number, eps: number): void;
}

/** Where build.sh puts the peer. */
export const RTEN_WASM = new URL('../../wasm/bench-rten/rten_peer.wasm', import.meta.url);

/** The rten-vecmath peer (forward), or none when its build is missing (a note says so). */
export async function rtenContenders(notes: string[]): Promise<Contender[]> {
  let bytes: Buffer;
  try {
    bytes = await readFile(RTEN_WASM);
  } catch {
    notes.push('rten-vecmath skipped: wasm/bench-rten/rten_peer.wasm is missing (bash build.sh bench-simd builds it).');
    return [];
  }
  const { instance } = (await WebAssembly.instantiate(bytes, {})) as unknown as WebAssembly.WebAssemblyInstantiatedSource;
  const k = instance.exports as unknown as RtenExports;
  return [
    {
      name: 'rten-vecmath', family: 'rten', op: 'forward', threads: 1, zeroCopy: true, note: 'rten-vecmath 0.27 SumSquare + Normalize (rten\'s RMSNormalization), +simd128, raw export',
      make(c: Case) {
        // The peer's memory only grows: inputs of each shape are allocated once and kept.
        const n = c.x.length;
        const [x, w, y] = [k.alloc_f32(n), k.alloc_f32(c.dim), k.alloc_f32(n)];
        new Float32Array(k.memory.buffer, x, n).set(c.x);
        new Float32Array(k.memory.buffer, w, c.dim).set(c.w);
        return { async: false, fn: () => k.rms_norm(x, w, y, c.rows, c.dim, c.eps), outputs: () => ({ y: new Float32Array(k.memory.buffer, y, n).slice() }) };
      },
    },
  ];
}
