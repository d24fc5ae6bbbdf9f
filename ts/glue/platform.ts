/**
 * What the running engine offers: Node or browser, threads, SIMD128, core count; how results
 * are allocated here.
 * @module
 */
import { BY_CODE, type Placed } from './dtypes.js';

/** True under Node.js (worker_threads, fs), false in browsers and Web Workers. */
export const isNode: boolean =
  typeof process !== 'undefined' && typeof process.versions === 'object' && !!process.versions?.node;

/**
 * Whether shared wasm memory can be used here: always in Node; in browsers only when the page
 * is cross-origin isolated (COOP/COEP headers), which is what exposes SharedArrayBuffer.
 */
export function threadsAvailable(): boolean {
  if (typeof SharedArrayBuffer !== 'function') return false;
  if (!isNode && (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated !== true) return false;
  try {
    new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true });
    return true;
  } catch {
    return false;
  }
}

/**
 * What a threads build lacks here, in words for an error message (call only when
 * {@link threadsAvailable} is false): a page that is not cross-origin isolated, or an engine
 * that gives this page (or this Node) no shared memory although it is.
 */
export function sharedMemoryMissing(): string {
  if (!isNode && (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated !== true) {
    return 'shared memory (a page has it only when cross-origin isolated: served with COOP/COEP headers)';
  }
  if (typeof SharedArrayBuffer !== 'function') {
    return isNode
      ? 'shared memory (SharedArrayBuffer: this Node was started without it)'
      : 'shared memory (SharedArrayBuffer: this engine does not give it to this page, although the page is cross-origin isolated)';
  }
  return 'shared memory (a WebAssembly.Memory with shared: true could not be made)';
}

// (func (result v128) v128.const 0): validates only where SIMD128 is implemented.
const SIMD_PROBE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 22, 1, 20, 0, 253, 12,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 11,
]);

/** Whether `probe` validates here; asked once per probe (an engine's features do not change). */
const validates = (() => {
  const seen = new Map<Uint8Array<ArrayBuffer>, boolean>();
  return (probe: Uint8Array<ArrayBuffer>): boolean => {
    let ok = seen.get(probe);
    if (ok === undefined) {
      try {
        ok = WebAssembly.validate(probe);
      } catch {
        ok = false;
      }
      seen.set(probe, ok);
    }
    return ok;
  };
})();

/** Whether the engine runs WebAssembly SIMD128 (every current browser and Node ≥ 16.4). */
export function simdSupported(): boolean {
  return validates(SIMD_PROBE);
}

// (func (result v128) v128.const 0, v128.const 0, v128.const 0, i32x4.relaxed_laneselect):
// validates only where relaxed SIMD is implemented and enabled.
const RELAXED_SIMD_PROBE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 61, 1, 59, 0,
  253, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  253, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  253, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  253, 139, 2, 11,
]);

/**
 * Whether the engine runs WebAssembly relaxed SIMD: by default in Node ≥ 22, Deno, Chromium ≥
 * 114 and Firefox ≥ 145; in Node 20 with `--experimental-wasm-relaxed-simd`.
 */
export function relaxedSimdSupported(): boolean {
  return validates(RELAXED_SIMD_PROBE);
}

/**
 * The cores this process was granted: in Node, `os.availableParallelism()` (the CPU affinity)
 * bounded by a CPU quota — cgroup v2 `cpu.max` or v1 `cpu.cfs_quota_us` of this process's
 * cgroup and those above it (a Kubernetes `limits.cpu`, Docker's `--cpus`), rounded up — and by
 * Slurm's `SLURM_CPUS_PER_TASK`; `navigator.hardwareConcurrency` elsewhere.
 */
export async function coreCount(): Promise<number> {
  if (isNode) {
    const os = await import(/* @vite-ignore */ 'node:os');
    const fs = await import(/* @vite-ignore */ 'node:fs');
    const cores = typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
    const slurm = Number(process.env.SLURM_CPUS_PER_TASK);
    const granted = Math.min(cores, cpuQuota((f) => fs.readFileSync(f, 'latin1')), Number.isInteger(slurm) && slurm > 0 ? slurm : Infinity);
    return Math.max(1, granted);
  }
  const n = (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator?.hardwareConcurrency;
  return typeof n === 'number' && n > 0 ? n : 1;
}

/**
 * Whether this thread may block in `Atomics.wait`: Node threads and Web Workers may, a
 * browser's main thread may not.
 */
export function canBlock(): boolean {
  if (isNode) return true;
  return typeof (globalThis as { document?: unknown }).document === 'undefined';
}

/**
 * Resolves after the event loop has had a turn (timers, I/O, messages): setImmediate in Node;
 * elsewhere a MessageChannel message, which unlike setTimeout(0) is not clamped to 4 ms.
 */
export function yieldToEventLoop(): Promise<void> {
  if (typeof setImmediate === 'function') return new Promise((r) => setImmediate(r));
  return new Promise((r) => {
    const ch = new MessageChannel();
    ch.port1.onmessage = () => {
      ch.port1.close();
      r();
    };
    ch.port2.postMessage(null);
  });
}

/** Node's Buffer, when there is one (its allocUnsafeSlow gives an ArrayBuffer of its own, not zeroed). */
const NodeBuffer = (globalThis as { Buffer?: { allocUnsafeSlow(n: number): { buffer: ArrayBuffer } } }).Buffer;

/** Below this many bytes (4096 floats) a zeroed buffer costs the same (bench/alloc.ts). */
const UNZEROED_FROM_BYTES = 16 << 10;

/**
 * A new buffer of `bytes` for a result the library allocates and the call then overwrites in
 * full; `shared`: a SharedArrayBuffer (the pool's results of calls on arrays in one, which its
 * workers write directly). In Node from 16 KiB up, memory that is not zeroed first
 * (`Buffer.allocUnsafeSlow`: an ArrayBuffer of its own, never a slice of Node's shared pool):
 * measured by `npm run bench:alloc`, zeroing is up to a third of allocating and writing 1–16
 * MiB. Browsers have no such allocation; a new array's pages are faulted in as the results are
 * written. View it from offset 0 with the result's length.
 */
function resultBuffer(bytes: number, shared = false): ArrayBufferLike {
  if (shared) return new SharedArrayBuffer(bytes);
  if (NodeBuffer !== undefined && bytes >= UNZEROED_FROM_BYTES) return NodeBuffer.allocUnsafeSlow(bytes).buffer;
  return new ArrayBuffer(bytes);
}

/** A new Float32Array of `n` floats for a result, allocated as {@link resultBuffer} says. */
export function resultArray(n: number, shared = false): Float32Array {
  return new Float32Array(resultBuffer(4 * n, shared), 0, n);
}

/**
 * A new array of `n` elements of dtype `dt` (an abi.ts Dtype code: the array of its facts) for
 * a result the library allocates, allocated as {@link resultBuffer} says (`shared` likewise).
 */
export function resultOf(dt: number, n: number, shared = false): Placed {
  const f = BY_CODE[dt]!;
  return new (f.Array as new (b: ArrayBufferLike, at: number, n: number) => Placed)(resultBuffer(f.bytes * n, shared), 0, n);
}

/** JavaScript's own array of dtype `dt` (a Float16Array) over the elements of `a`. */
export function jsArrayOver(a: Placed, dt: number): ArrayBufferView {
  const Js = (globalThis as unknown as Record<string, new (b: ArrayBufferLike, at: number, n: number) => ArrayBufferView>)[BY_CODE[dt]!.jsArray!]!;
  return new Js(a.buffer, a.byteOffset, a.length);
}

/*
 * The CPU quota a Linux process runs under, read from its cgroups (v2 `cpu.max`, v1
 * `cpu.cfs_quota_us` / `cpu.cfs_period_us`): what a Kubernetes `limits.cpu` or Docker's
 * `--cpus` sets, and what `os.availableParallelism()` (the CPU affinity) does not see.
 */

/**
 * The CPU quota of this process's cgroup and those above it, in cores rounded up (Infinity when
 * none is set or none can be read); `read` reads a file of /proc or /sys.
 */
export function cpuQuota(read: (path: string) => string): number {
  let lines: string[];
  try {
    lines = read('/proc/self/cgroup').split('\n');
  } catch {
    return Infinity;
  }
  let least = Infinity;
  const tryRead = (path: string): string | null => {
    try {
      return read(path).trim();
    } catch {
      return null;
    }
  };
  for (const line of lines) {
    const [, controllers, path] = /^\d+:([^:]*):(.*)$/.exec(line) ?? [];
    if (path === undefined) continue;
    const v2 = controllers === '';
    if (!v2 && !controllers!.split(',').includes('cpu')) continue;
    // The cgroup's folder and each one above it (a limit may be set on a parent: a pod's).
    for (let dir = path; ; dir = dir.slice(0, dir.lastIndexOf('/'))) {
      const base = `/sys/fs/cgroup${v2 ? '' : '/cpu'}${dir === '/' ? '' : dir}`;
      if (v2) {
        const [quota, period] = (tryRead(`${base}/cpu.max`) ?? 'max').split(/\s+/);
        if (quota !== 'max' && Number(quota) > 0 && Number(period) > 0) least = Math.min(least, Math.ceil(Number(quota) / Number(period)));
      } else {
        const quota = Number(tryRead(`${base}/cpu.cfs_quota_us`) ?? -1);
        const period = Number(tryRead(`${base}/cpu.cfs_period_us`) ?? 0);
        if (quota > 0 && period > 0) least = Math.min(least, Math.ceil(quota / period));
      }
      if (dir === '' || dir === '/') break;
    }
  }
  return least;
}
