/**
 * One run at a time per output directory and shard: a lock file beside the shard's manifest
 * (`rmsnorm.lock`, or `rmsnorm.shard-I-of-N.lock`), made with `link(2)` so that it appears
 * whole or not at all, naming its owner — pid, host, the process's start time, a random nonce —
 * and rewritten every few seconds by the owner (a heartbeat counter).
 *
 * A second run on a busy shard waits for it (or gives up after `lockWait` seconds). A lock
 * whose owner is gone is taken over (how that is told: lock-owner.ts): on the same machine by
 * its pid and start time, on the same kernel from another PID namespace by its heartbeat's
 * time, from another machine (a shared file system) once the heartbeat has not changed for
 * `lockStale` seconds. Locks of another shard count on the same directory (whose shards
 * overlap this one's) are refused. The lock file is never followed through a link nor read
 * past a few KiB.
 * @module
 */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, openSync, readSync, unlinkSync } from 'node:fs';
import { link, open, readdir, rename, unlink, writeFile, type FileHandle } from 'node:fs/promises';
import { readSmallFile } from '../confined.js';
import { hostname } from 'node:os';
import { codeOf, fsError, NormalizeError } from '../errors.js';
import { bootId, deadBecause, describeOwner, HEARTBEAT_S, judgedBy, machine, ownerOf, startOf, Watch, type LockOwner } from './lock-owner.js';
import { shown } from '../paths.js';
import { join } from 'node:path';

/** Default seconds after which a lock from another machine whose heartbeat stopped is stale: several missed heartbeats. */
export const STALE_S = 60;
/** A lock file's size: its JSON, padded, so that a heartbeat rewrites it in place with one write. */
const LOCK_BYTES = 1024;

/** The lock file's name for shard `index` of `count`. */
const lockName = (index: number, count: number): string => (count === 1 ? 'rmsnorm.lock' : `rmsnorm.shard-${index}-of-${count}.lock`);

/** The locks this process holds. */
const heldLocks = new Set<ShardLock>();

/**
 * Gives up every lock this process holds at once, synchronously (each only if still its own):
 * for a process that exits now (stopped by a signal) without waiting for the work in flight.
 */
export function releaseHeldLocks(): void {
  for (const lock of heldLocks) lock.releaseNow();
  heldLocks.clear();
}

/** A lock held: see the module doc. */
export class ShardLock {
  private timer: ReturnType<typeof setInterval> | null = null;
  /** Set when another run took the lock over (this run was thought dead): the run must stop. */
  lost: LockOwner | null = null;

  private constructor(
    readonly path: string,
    private readonly me: LockOwner,
    private readonly fh: FileHandle,
  ) {}

  /**
   * Takes the lock of shard `index`/`count` over `outDir`: waits while a live owner holds it
   * (calling `onWait` once with it), for at most `waitS` seconds (Infinity: as long as it
   * lives); takes over a dead owner's. A NormalizeError naming the owner when the wait ends, or
   * when a live run of another shard count writes the directory.
   */
  static async acquire(
    outDir: string, index: number, count: number,
    o: { waitS: number; staleS: number; signal?: AbortSignal; onWait?: (owner: LockOwner, how: string) => void; onTakeOver?: (owner: LockOwner | null, why: string) => void },
  ): Promise<ShardLock> {
    const path = join(outDir, lockName(index, count));
    const me: LockOwner = {
      pid: process.pid, host: hostname(), machine: machine(), started: startOf(process.pid), nonce: randomBytes(8).toString('hex'),
      shard: `${index}/${count}`, since: new Date().toISOString(), beat: 0, boot: bootId() || undefined, beatAt: Date.now(),
    };
    const watch = new Watch(o.staleS * 1000);
    const t0 = Date.now();
    let told = false;
    for (;;) {
      o.signal?.throwIfAborted();
      const mine = join(outDir, `.${lockName(index, count)}.${me.nonce}`);
      await writeFile(mine, text(me), { flag: 'wx' }).catch((e: unknown) => {
        throw fsError(e, 'write in', outDir);
      });
      const got = await link(mine, path).then(() => true, (e: unknown) => {
        if (codeOf(e) === 'EEXIST') return false;
        throw fsError(e, 'lock', path);
      }).finally(() => unlink(mine).catch(() => {}));
      if (got) {
        const lock = new ShardLock(path, me, await open(path, 'r+'));
        await lock.refuseOtherCounts(outDir, count, watch).catch(async (e: unknown) => {
          await lock.release();
          throw e;
        });
        lock.timer = setInterval(() => void lock.beat(), HEARTBEAT_S * 1000);
        lock.timer.unref?.();
        heldLocks.add(lock);
        return lock;
      }
      const held = await readLock(path);
      if (held === null) continue; // released meanwhile
      const owner = ownerOf(held);
      if (!watch.alive(path, held, owner)) {
        await takeOver(path, held);
        o.onTakeOver?.(owner, deadBecause(owner, o.staleS));
        continue;
      }
      if (Date.now() - t0 >= o.waitS * 1000) {
        throw new NormalizeError(`${count === 1 ? '' : `shard ${me.shard} of `}${shown(outDir)} is being written by ${owner ? describeOwner(owner) : 'another run'}; try again when it ends`, 'EBUSY');
      }
      if (!told && owner) o.onWait?.(owner, judgedBy(owner, o.staleS));
      told = true;
      await new Promise((r) => setTimeout(r, 500));
    }
  }

  /** Refuses to run beside a live lock of another shard count. */
  private async refuseOtherCounts(outDir: string, count: number, watch: Watch): Promise<void> {
    for (const n of await readdir(outDir)) {
      const m = /^rmsnorm(?:\.shard-\d+-of-(\d+))?\.lock$/.exec(n);
      if (!m || Number(m[1] ?? 1) === count) continue;
      const p = join(outDir, n);
      const held = await readLock(p);
      const owner = held === null ? null : ownerOf(held);
      if (held !== null && owner && watch.alive(p, held, owner)) {
        throw new NormalizeError(
          `${shown(outDir)} is being written by ${describeOwner(owner)}: runs with different shard counts share outputs, so they must not run at once`,
        );
      }
    }
  }

  /** Rewrites the lock with the next beat; notes a takeover. */
  private async beat(): Promise<void> {
    this.me.beat++;
    this.me.beatAt = Date.now();
    await this.fh.write(text(this.me), 0, 'utf8').catch(() => {});
    const held = await readLockOrNull(this.path);
    const owner = held === null ? null : ownerOf(held);
    if (owner && owner.nonce !== this.me.nonce) this.lost = owner;
  }

  /** {@link release} at once, synchronously (see {@link releaseHeldLocks}). */
  releaseNow(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    try {
      // As readLock: no link followed, no FIFO waited on, a few KiB at most.
      const fd = openSync(this.path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
      const b = Buffer.alloc(4 * LOCK_BYTES);
      let n = 0;
      try {
        n = readSync(fd, b, 0, b.length, 0);
      } finally {
        closeSync(fd);
      }
      if (ownerOf(b.toString('utf8', 0, n))?.nonce === this.me.nonce) unlinkSync(this.path);
    } catch {
      // gone, or not readable: nothing of ours to remove
    }
  }

  /** Gives the lock up (only if it is still this run's). */
  async release(): Promise<void> {
    heldLocks.delete(this);
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.fh.close().catch(() => {});
    const held = await readLockOrNull(this.path);
    if (held !== null && ownerOf(held)?.nonce === this.me.nonce) await unlink(this.path).catch(() => {});
  }
}

/**
 * The text of the lock file at `path`, or null when it is not there. A link, or anything but a
 * small regular file, is a NormalizeError (this tool's locks are never either): it is neither
 * followed nor read whole, and the run is refused rather than left waiting on it.
 */
const readLock = (path: string): Promise<string | null> => readSmallFile(path, 4 * LOCK_BYTES, 'the lock').then((b) => b?.toString('utf8') ?? null);

/** {@link readLock}, null for whatever cannot be read (checks after the lock was taken). */
const readLockOrNull = (path: string): Promise<string | null> => readLock(path).catch(() => null);

/** A lock's text: its owner's JSON, padded to a fixed size. */
const text = (o: LockOwner): string => JSON.stringify(o).padEnd(LOCK_BYTES - 1, ' ') + '\n';

/**
 * Removes the stale lock at `path` whose text was `held`, unless it changed meanwhile (another
 * run took it over first): moved aside, checked, and put back if it is not the stale one.
 */
async function takeOver(path: string, held: string): Promise<void> {
  const aside = `${path}.stale-${randomBytes(4).toString('hex')}`;
  try {
    await rename(path, aside);
  } catch {
    return; // gone already
  }
  const moved = await readLockOrNull(aside);
  if (moved !== null && moved !== held) await link(aside, path).catch(() => {});
  await unlink(aside).catch(() => {});
}
