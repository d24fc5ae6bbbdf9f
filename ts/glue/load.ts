/**
 * Finding, compiling and instantiating one of the wasm builds, in Node or a browser.
 * @module
 */
import { GLUE, WASM_URL } from '../entries.js';
import { ABI_HASH } from '../generated/abi.js';
import { sharedMemoryMissing, isNode, relaxedSimdSupported, simdSupported, threadsAvailable } from './platform.js';
import type { Build } from '../types.js';

/** What a build needs of the engine, and its counterpart on the other kind of memory. */
interface BuildTraits {
  /** Its memory is shared (a threads build). */
  shared: boolean;
  /** It needs relaxed SIMD. */
  relaxed: boolean;
  /** It needs SIMD128. */
  simd: boolean;
  /** The same code on the other kind of memory (a threads build's plain twin, and back); none for `scalar`. */
  twin: Build | null;
}

const TRAITS: Record<Build, BuildTraits> = {
  simd: { shared: false, relaxed: false, simd: true, twin: 'simd-threads' },
  'simd-threads': { shared: true, relaxed: false, simd: true, twin: 'simd' },
  'simd-relaxed': { shared: false, relaxed: true, simd: true, twin: 'simd-relaxed-threads' },
  'simd-relaxed-threads': { shared: true, relaxed: true, simd: true, twin: 'simd-relaxed' },
  scalar: { shared: false, relaxed: false, simd: false, twin: null },
};

/** Every build's name, in the order error messages list them. */
export const BUILDS = Object.keys(TRAITS) as readonly Build[];

/** Whether `build` is one of {@link BUILDS}. */
export function isBuild(build: unknown): build is Build {
  return typeof build === 'string' && Object.prototype.hasOwnProperty.call(TRAITS, build);
}

/** Whether `build`'s memory is shared (the builds the pool's workers join). */
export function isShared(build: Build): boolean {
  return TRAITS[build].shared;
}

/** The same code as `build` on the other kind of memory: `simd` ↔ `simd-threads`, `simd-relaxed` ↔ `simd-relaxed-threads`. */
export function twinOf(build: Build): Build | null {
  return TRAITS[build].twin;
}

/**
 * What this engine lacks to run `build`, as a phrase for an error message, or null when it
 * can run it.
 */
export function missingFor(build: Build): string | null {
  const t = TRAITS[build];
  if (t.simd && !simdSupported()) return 'WebAssembly SIMD128';
  if (t.relaxed && !relaxedSimdSupported()) {
    return 'relaxed SIMD (Node 20 has it with --experimental-wasm-relaxed-simd; Node 22+, Deno, Chromium 114+ and Firefox 145+ by default)';
  }
  if (t.shared && !threadsAvailable()) return sharedMemoryMissing();
  return null;
}

/**
 * The raw exports every build has (byte addresses in, status codes out; see crate/src/bindings/).
 * Called only through the operation records of ops.ts.
 */
export interface KernelExports {
  /** Allocates `len` floats (16-byte aligned) in the module's memory; returns the byte address, 0 when memory cannot grow. */
  alloc_f32(len: number): number;
  /** Frees what alloc_f32 returned for the same `len`. */
  free_f32(addr: number, len: number): void;
  /** Rows per dweight block: the pool's backward chunks start on multiples of it. */
  dg_block_rows(): number;
  /** The hash of the abi.rs the module was built from (abi.ts `ABI_HASH`). */
  abi_hash(): number;
  // The kernels read a call block (call-block.ts) at `params`: the parameters, then at `addrs`
  // the operands' addresses in ops.ts's order. Each returns a status (0: done).
  /** Forward over rows `[row0, row1)` of matrices whose row 0 the addresses give. */
  rms_norm_forward(params: number, addrs: number, row0: number, row1: number): number;
  /** Backward over rows `[row0, row0 + rows)` of a `total`-row matrix (addresses at row `row0`), carrying the open dweight block in the workspace. */
  rms_norm_backward(params: number, addrs: number, row0: number, rows: number, total: number): number;
  /** Backward rows `[row0, row1)` of a pool job of `rows` rows, dweight partials per block into the workspace. */
  rms_norm_backward_rows(params: number, addrs: number, row0: number, row1: number, rows: number): number;
  /** Adds a pool job's dweight partials in block order into dweight (onto it when `accumulate` is 1). */
  rms_norm_backward_reduce(params: number, addrs: number, rows: number, accumulate: number): number;
  /**
   * Any other operation's entry points (crate/src/bindings/ names them `rms_norm_*`): the
   * call block's parameters and addresses, then row numbers; a status back. Only the operation
   * records of ops.ts call them.
   */
  readonly [entry: `rms_norm_${string}`]: (params: number, addrs: number, ...rows: number[]) => number;
  /** `n` elements of storage dtype `dtype` (an abi.ts Dtype code) at `src` widened to float32 at `dst`. */
  widen(src: number, dst: number, n: number, dtype: number): number;
  /** `n` floats at `src` rounded (nearest even) to elements of storage dtype `dtype` at `dst`. */
  narrow(src: number, dst: number, n: number, dtype: number): number;
}

/**
 * `WebAssembly.Memory` where the project's type libraries declare it (the `dom` lib does), else
 * the part of it this package uses: so these typings compile for a Node program without the
 * `dom` lib as well.
 */
export type WasmMemory = typeof globalThis extends WithWasm<'Memory', infer M> ? M : WasmMemoryLike;

/** `WebAssembly.Module` where the project's type libraries declare it, else an opaque object (see {@link WasmMemory}). */
export type WasmModule = typeof globalThis extends WithWasm<'Module', infer M> ? M : object;

/** A global scope whose `WebAssembly` namespace has a class `K` with instances `I`. */
export interface WithWasm<K extends string, I> {
  /** The WebAssembly namespace. */
  WebAssembly: Record<K, WasmClass<I>>;
}

/** A class whose instances are `I` (as `WebAssembly.Memory` is declared). */
export interface WasmClass<I> {
  /** Its instances' prototype, typed as an instance. */
  prototype: I;
}

/** The part of `WebAssembly.Memory` this package uses. */
export interface WasmMemoryLike {
  /** The memory's bytes (a SharedArrayBuffer for the `simd-threads` build). */
  readonly buffer: ArrayBuffer | SharedArrayBuffer;
  /** Grows the memory by `pages` pages of 64 KiB; returns its former size in pages. */
  grow(pages: number): number;
}

/** An instantiated build. `module` and (for `simd-threads`) `memory` are what workers need to join it. */
export interface LoadedWasm {
  /** Which build this is. */
  build: Build;
  /** The kernel's raw exports. */
  exports: KernelExports;
  /** The module's memory (views of it are what `allocF32` hands out). */
  memory: WasmMemory;
  /** The compiled module. */
  module: WasmModule;
  /** Whether the memory is shared (the `simd-threads` build). */
  shared: boolean;
}

/**
 * The build `init()` picks: `simd-relaxed` where the engine validates relaxed SIMD, else
 * `simd` wherever SIMD128 runs, else `scalar`. Not a threads build, even where one could run:
 * its memory is a SharedArrayBuffer, which V8 copies plain arrays into and out of at about
 * half the speed (`npm run bench:window` compares the two), and the sync API gains nothing
 * from sharing. The pool loads the threads twin of this build itself.
 */
export function defaultBuild(): Build {
  if (!simdSupported()) return 'scalar';
  return relaxedSimdSupported() ? 'simd-relaxed' : 'simd';
}

/**
 * Compiles `build`'s module; in a browser while it downloads (compileStreaming), where the
 * server gives it the `application/wasm` type that needs (else from the whole download). The
 * bytes are returned too when they were read whole (a threads build reads its memory limits
 * from them).
 */
async function compileBuild(build: Build): Promise<{ module: WebAssembly.Module; bytes: Uint8Array | null }> {
  const url = WASM_URL[build]();
  if (isNode) {
    // Node's fetch cannot read file: URLs.
    const fs = await import(/* @vite-ignore */ 'node:fs/promises');
    const bytes = await fs.readFile(url);
    return { module: await WebAssembly.compile(bytes as Uint8Array<ArrayBuffer>), bytes };
  }
  const res = await fetch(url);
  if (!res.ok) throw new Error(`rmsnorm-wasm: could not fetch ${url.href}: HTTP ${res.status}`);
  if (!isShared(build) && typeof WebAssembly.compileStreaming === 'function' && res.headers.get('Content-Type')?.split(';')[0]?.trim() === 'application/wasm') {
    return { module: await WebAssembly.compileStreaming(res), bytes: null };
  }
  const bytes = new Uint8Array(await res.arrayBuffer());
  return { module: await WebAssembly.compile(bytes), bytes };
}

/** Reads the limits (in 64 KiB pages) of the memory a module imports, from its import section. */
function importedMemoryLimits(bytes: Uint8Array): { initial: number; maximum?: number } {
  let p = 8;
  const u32 = () => {
    let r = 0;
    let shift = 0;
    for (;;) {
      const b = bytes[p++]!;
      r += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return r;
      shift += 7;
    }
  };
  const skipName = () => {
    const n = u32();
    p += n;
  };
  while (p < bytes.length) {
    const id = bytes[p++]!;
    const size = u32();
    const end = p + size;
    if (id === 2) {
      for (let n = u32(); n > 0; n--) {
        skipName();
        skipName();
        const kind = bytes[p++]!;
        if (kind === 0) u32();
        else if (kind === 1) { p++; const f = bytes[p++]!; u32(); if (f & 1) u32(); }
        else if (kind === 3) p += 2;
        else if (kind === 4) { p++; u32(); }
        else if (kind === 2) {
          const flags = bytes[p++]!;
          const initial = u32();
          return flags & 1 ? { initial, maximum: u32() } : { initial };
        } else break;
      }
    }
    p = end;
  }
  throw new Error('rmsnorm-wasm: a threads module imports no memory (was it built by build.sh?)');
}

/**
 * Compiles and instantiates `build` on this thread. For a threads build a shared memory is
 * created here (pass `join` to instantiate on an existing module and memory instead, as
 * workers do).
 */
export async function loadWasm(
  build: Build,
  join?: { module: WasmModule; memory: WasmMemory },
): Promise<LoadedWasm> {
  // The glue and the module are fetched at once: one round trip to the server, not two.
  const [glue, compiled] = await Promise.all([GLUE[build](), join ? null : compileBuild(build)]);
  const shared = isShared(build);
  let module: WebAssembly.Module;
  let memory: WebAssembly.Memory | undefined;
  if (join) {
    ({ module, memory } = join);
  } else {
    module = compiled!.module;
    if (shared) {
      const { initial, maximum } = importedMemoryLimits(compiled!.bytes!);
      memory = new WebAssembly.Memory({ initial, maximum: maximum ?? initial, shared: true });
    }
  }
  const exports = glue.initSync({ module, memory }) as KernelExports & { memory?: WebAssembly.Memory };
  memory ??= exports.memory;
  if (!memory) throw new Error(`rmsnorm-wasm: build ${build} exposes no memory`);
  checkAbi(build, exports);
  return { build, exports, memory, module, shared };
}

/**
 * Throws unless `exports` (build `build`) were built from the abi.rs this package's scripts were
 * written from: a module of another version would read the call block, the operands or the
 * storage codes otherwise and give wrong results without an error.
 */
export function checkAbi(build: string, exports: Pick<KernelExports, 'abi_hash'>): void {
  const have = exports.abi_hash() >>> 0;
  if (have !== ABI_HASH) {
    throw new Error(
      `rmsnorm-wasm: build ${build} comes from another version of the package than its scripts (ABI ${have.toString(16)}, scripts ${ABI_HASH.toString(16)}): ` +
        'serve the .wasm files of the same version as the scripts (a cached or copied .wasm may be older), or rebuild both (bash build.sh && npm run build:ts)',
    );
  }
}
