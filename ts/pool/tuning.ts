/**
 * The pool's tuning constants, each with the measurement or reason behind it. Everything the
 * pool decides by size or time is decided here.
 * @module
 */

/**
 * Below these sizes (elements of the call's input, whatever its operation) a call runs inline
 * on the calling thread: a dispatch costs more than the threads save. Measured with `npm run bench:pool` (bench/pool.ts) on the 2-core
 * machine: where the caller takes part (Node), the pool was ≥ 5% faster than the sync call
 * from 64Ki elements (dim 1024) in most runs but not all, and from 128Ki in every run, which
 * is the threshold used. A browser's main thread cannot take part or wait synchronously, and
 * `npm run bench:browser` put the crossover between 1.5Mi and 2Mi elements both ways.
 */
export const INLINE_BELOW = {
  join: 128 * 1024,
  async: 2 * 1024 * 1024,
} as const;

/**
 * The longest the pool keeps the calling thread (the event loop, in Node) before it yields to
 * timers and I/O: between queued calls, and between chunks of one call. A 20 ms timer then
 * fires within a few ms of its time even during a burst of queued calls.
 */
export const SLICE_MS = 2;

/**
 * Polls (one Atomics.load each, about 5 ns in optimized V8 code) a worker spends waiting for
 * the next job before it sleeps in Atomics.wait, and the calling thread for the workers' last
 * chunks: about 100 µs, more than a futex wake-up on this VM (40–80 µs), so that calls arriving
 * back to back find the workers awake. With 50 µs, a 128×2048 call (65 µs) often found them
 * asleep and sharding it stopped paying (1.0× instead of 1.6×, A/B in one run). Polling is
 * bounded, and under contention the pool stops handing work to the workers (shard-choice.ts), so they
 * sleep instead of taking a core a busy machine needs.
 */
export const SPIN_POLLS = 20_000;

/**
 * Elements of work (the backward counted twice) per thread a kernel job wakes: a job of W
 * elements runs on min(threads, ⌈W / THREAD_WORK⌉) threads. A wake-up costs 40–80 µs on this
 * project's VM, what a thread computes of 128 Ki elements in cache: below that a further thread
 * slows the job down (`npm run bench:pool`, threads curve).
 */
export const THREAD_WORK = 128 * 1024;

/** Chunks per participant: enough to balance a late or descheduled thread, few enough to be cheap. */
export const CHUNKS_PER_THREAD = 4;
/** Don't cut chunks below this many elements. */
export const MIN_CHUNK_ELEMS = 8 * 1024;
/**
 * Nor above this many (elements, backward counted twice): a chunk the calling thread computes
 * holds the event loop for its duration (1 Mi elements ≈ 0.5–1 ms here).
 */
export const MAX_CHUNK_ELEMS = 1024 * 1024;

/**
 * How long destroy() lets workers leave on their own (so that they release their stack and
 * TLS themselves) before it terminates them.
 */
export const EXIT_GRACE_MS = 50;

/**
 * How many times a worker that dies before saying ready is started (a worker that fails after
 * it started is replaced anyway). WebKitGTK 2.50 on this project's machine now and then fires
 * an error event without a message at a new module worker before any of its code runs: 1 of 4
 * workers created at once from a page of the Vite dev server, and the pool's creation failed
 * with it; a second start of the same script succeeded every time it was tried.
 */
export const START_ATTEMPTS = 3;

/**
 * Whether a call that could be sharded runs better on the workers or on the calling thread
 * alone is learnt, not assumed (ts/pool/caller/shard-choice.ts): the last SAMPLES times per element of each
 * way, per kind of call; sharding unless the calling thread alone was faster by INLINE_MARGIN.
 * On an idle machine sharding wins from INLINE_BELOW up; with another process holding a core,
 * a worker handed a chunk can be kept off the CPU for milliseconds and the calling thread alone
 * is faster (`npm run bench:pool`'s contention table: 2× slower before the pool learnt this).
 * Every PROBE_EVERY calls, at most every PROBE_MS, the other way is tried again, so that the
 * choice follows the load at a cost of one call in that period.
 */
export const SAMPLES = 5;
/**
 * Sharding stays the choice while the calling thread alone is not more than 5% faster: the
 * pool promises calls no slower than the sync call by more than that. (With medians it took
 * 20%: single slow calls — a page fault of a new result, a collection — moved the median; the
 * second fastest of five, what the choice compares now, is not moved by them.)
 */
export const INLINE_MARGIN = 0.95;
export const PROBE_EVERY = 16;
export const PROBE_MS = 100;
export const PROBE_RUN = 3;
/**
 * Each probe that leaves the choice as it was doubles the wait before the next (calls and ms),
 * up to this factor: at most one probe per 512 calls and 3.2 s once the choice has held for a
 * while. On the 2-core machine sharding plain arrays ran at 0.4–0.67× the calling thread alone
 * (`npm run bench:pool`, "sharded forced" rows), and a probe every 16 calls cost the plain-array
 * pool ~15% of its calls' time; a change of load still shows at the next probe, and a way that
 * slows down is left at once (its own timings say so).
 */
export const PROBE_BACKOFF_MAX = 32;

/**
 * Task jobs (tasks.ts): records in the ring, and the bytes of each worker's region, the most
 * rows one record moves. A record costs a claim and two system calls; REGION_BYTES keeps a
 * record's rows in the core's cache between its read, its normalization and its write.
 */
export const TASK_SLOTS = 64;
export const REGION_BYTES = 4 << 20;

/**
 * SharedArrayBuffers of the caller's a worker holds at most (pool calls on arrays in them copy
 * their rows in the workers): a pool that meets many buffers keeps only the last ones alive.
 */
export const HELD_BUFFERS = 16;
