/**
 * The hand-written roofs (bench/roofs/roofs.wat, assembled here with the `wabt` package): a
 * v128 copy loop and two-pass RMSNorm kernels with the package's summation order, on a memory
 * of their own. The benchmark reports the package as a share of them ("% of roof"): what the
 * same memory traffic and the same arithmetic cost when written directly in WebAssembly.
 * @module
 */
import { readFile } from 'node:fs/promises';

/** The roof module's exports (addresses are byte offsets into `memory`). */
export interface RoofExports {
  memory: WebAssembly.Memory;
  copy(src: number, dst: number, bytes: number): void;
  fwd_f32(x: number, w: number, y: number, rows: number, dim: number, eps: number): void;
  bwd_f32(dy: number, x: number, w: number, dx: number, dw: number, work: number, rows: number, dim: number, eps: number): void;
  fwd_bf16(x: number, w: number, y: number, rows: number, dim: number, eps: number): void;
  /** float16 rows; `dim` a multiple of 4. */
  fwd_f16(x: number, w: number, y: number, rows: number, dim: number, eps: number): void;
}

/** The roofs, instantiated once, with a bump allocator over their memory. */
export interface Roofs {
  k: RoofExports;
  /** Allocates `bytes` (64-byte aligned) and returns the address; views of the memory must be re-made afterwards. */
  alloc(bytes: number): number;
  /** Frees everything allocated so far. */
  reset(): void;
  /** A Float32Array / Uint16Array view of `n` elements at `addr`. */
  f32(addr: number, n: number): Float32Array;
  u16(addr: number, n: number): Uint16Array;
}

let loaded: Promise<Roofs> | null = null;

/** Assembles and instantiates the roof module (once). */
export function roofs(): Promise<Roofs> {
  loaded ??= (async () => {
    const wabt = await (await import('wabt')).default();
    const text = await readFile(new URL('./roofs/roofs.wat', import.meta.url), 'utf8');
    const mod = wabt.parseWat('roofs.wat', text, { simd: true, bulk_memory: true });
    const { buffer } = mod.toBinary({});
    mod.destroy();
    const { instance } = (await WebAssembly.instantiate(buffer)) as unknown as WebAssembly.WebAssemblyInstantiatedSource;
    const k = instance.exports as unknown as RoofExports;
    let top = 64;
    return {
      k,
      alloc(bytes) {
        const at = top;
        top = Math.ceil((top + bytes) / 64) * 64;
        const need = top - k.memory.buffer.byteLength;
        if (need > 0) k.memory.grow(Math.ceil(need / 65536));
        return at;
      },
      reset() {
        top = 64;
      },
      f32: (addr, n) => new Float32Array(k.memory.buffer, addr, n),
      u16: (addr, n) => new Uint16Array(k.memory.buffer, addr, n),
    };
  })();
  return loaded;
}
