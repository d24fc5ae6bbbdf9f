/**
 * Test and benchmark controls of a pool, kept off the pool object: a pool registers its hooks
 * here, and tests or benchmarks reach them with {@link poolHooks}. This module is not in
 * package.json's `exports`, so the published API has no way to them.
 * @module
 */

/** What a test or benchmark may do to a pool. */
export interface PoolHooks {
  /** Queues a job that makes worker `i` throw; resolves to that job's rejection reason. */
  failWorker(i: number): Promise<unknown>;
  /** Changes the inline threshold (elements) of both directions: the threshold benchmark. */
  setInlineBelow(elems: number): void;
  /** Every call big enough to shard runs `'sharded'` or `'alone'` on the calling thread; null: as shard-choice.ts decides. */
  forceWay(way: 'sharded' | 'alone' | null): void;
  /** Worker `i` stops inside the next chunk it claims until {@link release}. */
  hold(i: number): void;
  release(): void;
  /** Whether worker `i` is inside a job. */
  busy(i: number): boolean;
  /** Terminates worker `i` from outside, as a crash would. */
  killWorker(i: number): void;
  /** Task records (the task ring) the workers have finished since the pool started. */
  taskRecords(): number;
  /** Threads (workers, and the calling thread where it took part) of the last kernel job. */
  lastJobThreads(): number;
}

const registry = new WeakMap<object, PoolHooks>();

/** Called by a pool once, at construction. */
export function registerPoolHooks(pool: object, hooks: PoolHooks): void {
  registry.set(pool, hooks);
}

/** The hooks of `pool` (a pool from createPool). */
export function poolHooks(pool: object): PoolHooks {
  const h = registry.get(pool);
  if (!h) throw new TypeError('poolHooks: not a pool made by createPool');
  return h;
}
