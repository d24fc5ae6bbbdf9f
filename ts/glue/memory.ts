/**
 * The module's linear memory seen from JavaScript: a Float32Array view that is re-made after
 * growth, the test "does this array live in wasm memory?", allocF32 handles, and the reused
 * window that plain Float32Arrays are streamed through (see call/placement/placer.ts).
 * @module
 */
import type { LoadedWasm } from './load.js';
import type { Placed } from './dtypes.js';

/** An array a dtype may be held in (a dtype's facts' `Array`). */
type Held = Placed | Float64Array;
/** The constructor of an array a dtype is held in (a dtype's facts' `Array`, or the caller's array's own). */
export type ArrayType<T extends Held> = { new (b: ArrayBufferLike, at?: number, n?: number): T; readonly BYTES_PER_ELEMENT: number };

/** Storage for `length` elements inside the module's memory, viewed as arrays of type `T`: {@link F32Buffer}'s and {@link U16Buffer}'s shape, for any dtype's array. */
export interface DataBuffer<T extends Held> {
  readonly length: number;
  view(): T;
  free(): void;
  [Symbol.dispose](): void;
}

/**
 * Storage for `length` 16-bit words inside the module's memory (half-precision bit patterns,
 * see {@link allocU16}): as {@link F32Buffer}, with views of type Uint16Array (wrap one as a
 * Float16Array over the same bytes where the engine has it).
 */
export interface U16Buffer {
  /** Number of 16-bit elements. */
  readonly length: number;
  /** A Uint16Array over the storage; make a new one after anything that may grow memory. */
  view(): Uint16Array;
  /** Returns the storage to the allocator; view() and free() throw afterwards. */
  free(): void;
  /** free() unless already freed. */
  [Symbol.dispose](): void;
}

/** Storage for `length` floats inside the module's memory; see {@link allocF32}. */
export interface F32Buffer {
  /** Number of floats. */
  readonly length: number;
  /**
   * A Float32Array over the storage. Make a new one after anything that may grow memory
   * (another allocation, a call on plain arrays): an old view of non-shared memory is detached
   * by growth. Views are used in place by rmsNorm / rmsNormBackward / the pool: no copies.
   */
  view(): Float32Array;
  /**
   * Returns the storage to the allocator. After it, view() and free() throw an Error. Views
   * made before cannot be revoked by JavaScript: do not use them after free() (the storage may
   * already belong to the next allocation).
   */
  free(): void;
  /** free() unless already freed, for `using b = allocF32(n)` (TypeScript ≥ 5.2). */
  [Symbol.dispose](): void;
}

// `using` looks the method up as Symbol.dispose: engines without it (Node < 18.18, older
// browsers) get the conventional polyfill, the same symbol TypeScript's helpers fall back to.
(Symbol as { dispose?: symbol }).dispose ??= Symbol.for('Symbol.dispose');
(Symbol as { asyncDispose?: symbol }).asyncDispose ??= Symbol.for('Symbol.asyncDispose');

/** Floats are placed at multiples of 4 (16 bytes), the v128 size. */
const ALIGN = 4;
const roundUp = (n: number) => Math.ceil(n / ALIGN) * ALIGN;

const heaps = new WeakMap<LoadedWasm, Heap>();

/**
 * The one {@link Heap} of an instance: the sync API and the pool over the same instance share
 * it, because it remembers the buffers the memory had before it grew (views of them must still
 * be recognized).
 */
export function heapOf(wasm: LoadedWasm): Heap {
  let h = heaps.get(wasm);
  if (h === undefined) heaps.set(wasm, (h = new Heap(wasm)));
  return h;
}

/** The memory of one instantiated build, as views and an allocator; one per instance ({@link heapOf}). */
export class Heap {
  readonly wasm: LoadedWasm;
  private f32view: Float32Array;
  private i32view: Int32Array;
  /** The views of all memory as the dtypes' arrays, by constructor ({@link view}). */
  private readonly views = new Map<ArrayType<Held>, Held>();
  private lastView: Held | null = null;
  // Buffers this memory had before it grew: views on them still address this memory
  // (shared memory), or are detached (non-shared); either way we recognize them.
  private readonly past = new WeakSet<ArrayBufferLike>();
  private readonly shared: boolean;

  constructor(wasm: LoadedWasm) {
    this.wasm = wasm;
    this.shared = wasm.shared;
    this.f32view = new Float32Array(wasm.memory.buffer);
    this.i32view = new Int32Array(wasm.memory.buffer);
  }

  /** The current view of all memory (re-made if the memory grew). */
  f32(): Float32Array {
    // Growth detaches a non-shared memory's old buffer, and a view of a detached buffer has
    // length 0: reading it is much cheaper than the memory.buffer host getter (~13 ns in
    // Node 20), which only shared memory needs (its old buffers stay attached).
    if (!this.shared && this.f32view.length !== 0) return this.f32view;
    const buf = this.wasm.memory.buffer;
    if (this.f32view.buffer !== buf) {
      this.past.add(this.f32view.buffer);
      this.f32view = new Float32Array(buf);
    }
    return this.f32view;
  }

  /** The current view of all memory as 32-bit integers (call blocks), re-made as {@link f32}. */
  i32(): Int32Array {
    if (!this.shared && this.i32view.length !== 0) return this.i32view;
    if (this.i32view.buffer !== this.f32().buffer) this.i32view = new Int32Array(this.f32view.buffer);
    return this.i32view;
  }

  /**
   * The current view of all memory as arrays of type `Type` (a dtype's facts' `Array`: half
   * bits as a Uint16Array, a quantized output's bytes), re-made as {@link f32}; an element's
   * byte address divided by `Type.BYTES_PER_ELEMENT` is its index.
   */
  view<T extends Held>(Type: ArrayType<T>): T {
    const buf = this.f32().buffer;
    // A call asks for the same type again and again: the last one is kept out of the map.
    if (this.lastView?.constructor === Type && this.lastView.buffer === buf) return this.lastView as T;
    let v = this.views.get(Type) as T | undefined;
    if (v === undefined || v.buffer !== buf) this.views.set(Type, (v = new Type(buf)));
    this.lastView = v;
    return v;
  }

  /** Whether `a` is a view of this memory, so that its byteOffset is its wasm address. */
  holds(a: Placed): boolean {
    const b = a.buffer;
    if (b === this.f32().buffer) return true;
    if (!this.past.has(b)) return false;
    if (this.wasm.shared) return true;
    return false;
  }

  /**
   * `a`'s byte address (its byteOffset) when it is a view of this memory (see {@link holds}),
   * else -1. Throws a TypeError naming `fn` and `name` on a stale view: one of non-shared
   * memory from before it grew (detached). `cur` is `f32().buffer`, for callers that place
   * several arrays at once.
   */
  addressOf(fn: string, name: string, a: Placed, cur: ArrayBufferLike = this.f32().buffer): number {
    const b = a.buffer;
    if (b === cur) return a.byteOffset;
    if (this.shared) return this.past.has(b) ? a.byteOffset : -1;
    // Growth detached every old buffer of non-shared memory: a view with elements is not of one.
    if (a.length !== 0 || !this.past.has(b)) return -1;
    throw new TypeError(
      `${fn}: ${name} is a stale view of wasm memory (detached when the memory grew); call view() again`,
    );
  }

  /** Allocates `length` floats; throws a RangeError when memory cannot grow that far. */
  alloc(length: number): number {
    // The raw export returns an i32: addresses past 2 GiB (the simd build's memory reaches
    // 4 GiB) come back negative unless read as unsigned.
    const addr = this.wasm.exports.alloc_f32(length) >>> 0;
    if (addr === 0) {
      throw new RangeError(
        `rmsnorm-wasm: cannot allocate ${length} floats (${length * 4} bytes) in wasm memory ` +
          `(now ${this.wasm.memory.buffer.byteLength} bytes)`,
      );
    }
    return addr;
  }

  free(addr: number, length: number): void {
    this.wasm.exports.free_f32(addr, length);
  }

  /** A user-owned buffer of floats (the allocF32 API). */
  allocBuffer(length: number): F32Buffer {
    return this.allocArray('allocF32', length, Float32Array);
  }

  /** A user-owned buffer of 16-bit words (the allocU16 API: half-precision bit patterns). */
  allocBuffer16(length: number): U16Buffer {
    return this.allocArray('allocU16', length, Uint16Array);
  }

  /**
   * A buffer of `length` elements (checked by the caller: call/check/arrays.ts `checkLength`)
   * viewed as `Type` (a dtype's facts' `Array`); `fn` names the call in errors.
   */
  allocArray<T extends Held>(fn: string, length: number, Type: ArrayType<T>): DataBuffer<T> {
    // The allocator counts floats: narrower elements take fewer (16-byte aligned either way).
    const floats = Math.ceil((length * Type.BYTES_PER_ELEMENT) / 4);
    let addr = this.alloc(floats);
    const heap = this;
    return {
      length,
      view() {
        if (addr === 0) throw new Error(`${fn}: view() called after free(); allocate a new buffer`);
        return new Type(heap.f32().buffer, addr, length);
      },
      free() {
        if (addr === 0) throw new Error(`${fn}: free() called twice on the same buffer`);
        heap.free(addr, floats);
        addr = 0;
      },
      [Symbol.dispose]() {
        if (addr !== 0) this.free();
      },
    };
  }
}

/**
 * One reusable region of wasm memory (a placer's window, see call/placement/placer.ts). It only grows, and
 * only when one segment needs more than it holds, so repeated calls allocate nothing.
 */
export class Scratch {
  private addr = 0;
  private floats = 0;
  /** Changes whenever the region moves (a carve that needed more room): addresses kept from before are stale. */
  generation = 0;
  constructor(private readonly heap: Heap) {}

  /**
   * Makes room for regions of the given float counts; returns each one's byte address.
   *
   * Where regions start matters for the copies in and out: a copy whose source and
   * destination addresses are a few bytes apart modulo 4 KiB runs up to 15× slower (loads
   * are taken to depend on the stores just made: "4K aliasing"; `npm run bench:window`
   * shows it), and large JavaScript arrays start just past a page boundary, as do their
   * rows when a row is a multiple of 1 KiB floats. So the first region starts 2 KiB into a
   * page, and each region after it is a whole number of pages plus 256 bytes further on.
   */
  carve(sizes: readonly number[]): number[] {
    let total = 0;
    for (let i = 0; i < sizes.length; i++) total += regionFloats(sizes[i]!);
    const base = this.carveOne(total);
    const addrs: number[] = [];
    let off = base;
    for (let i = 0; i < sizes.length; i++) {
      addrs.push(off);
      off += regionFloats(sizes[i]!) * 4;
    }
    return addrs;
  }

  /**
   * `carve([floats])[0]` without the arrays: the byte address of room for `floats` floats at
   * the start of the region (2 KiB into a page, see {@link carve}).
   */
  carveOne(floats: number): number {
    const total = roundUp(floats) + SLACK_FLOATS;
    if (total > this.floats) {
      if (this.addr !== 0) this.heap.free(this.addr, this.floats);
      this.addr = 0;
      this.floats = 0;
      this.addr = this.heap.alloc(total);
      this.floats = total;
      this.generation++;
    }
    return Math.ceil(this.addr / PAGE) * PAGE + PAGE / 2;
  }

  /** Returns the region to the allocator. */
  release(): void {
    if (this.addr !== 0) this.heap.free(this.addr, this.floats);
    this.addr = 0;
    this.floats = 0;
    this.generation++;
  }
}

const PAGE = 4096;
/** Most floats {@link Scratch.carve} adds to one region (its padding): budgets subtract it per region. */
export const REGION_PAD_FLOATS = (PAGE + 256) / 4;
/** Room to move the start to 2 KiB into a page. */
const SLACK_FLOATS = (PAGE + PAGE / 2) / 4;
/** A region's floats, padded to whole pages plus 256 bytes (see Scratch.carve). */
export const regionFloats = (n: number) => (Math.ceil((n * 4) / PAGE) * PAGE + 256) / 4;
