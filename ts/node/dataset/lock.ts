/**
 * One run at a time per output directory and shard: a lock file beside the shard's manifest
 * (`rmsnorm.lock`, or `rmsnorm.shard-I-of-N.lock`), made with `link(2)` so that it appears
 * whole or not at all, naming its owner — pid, host, the process's start time, a random nonce —
 * and rewritten every few seconds by the owner (a heartbeat counter).
 *
 * A second run on a busy shard waits for it (or gives up after `lockWait` seconds). A lock
 * whose owner is gone is taken over: on the same machine (host, boot and pid namespace) the
 * owner's pid is checked, with its start time so that a reused pid does not count; from another
 * machine (a shared file system) the heartbeat is watched, and a lock that has not changed for
 * `lockStale` seconds is stale. Locks of another shard count on the same directory (whose
 * shards overlap this one's) are refused.
 * @module
 */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, openSync, readFileSync, readlinkSync, readSync, unlinkSync } from 'node:fs';
import { link, open, readdir, rename, unlink, writeFile, type FileHandle } from 'node:fs/promises';
import { readSmallFile } from '../confined.js';
import { hostname } from 'node:os';
import { codeOf, fsError, NormalizeError } from '../errors.js';
import { alive } from '../atomic.js';
import { shown } from '../paths.js';
import { join } from 'node:path';

/** Seconds between heartbeats. */
const HEARTBEAT_S = 5;
/** Default seconds after which a lock from another machine whose heartbeat stopped is stale: several missed heartbeats. */
export const STALE_S = 60;
/** A lock file's size: its JSON, padded, so that a heartbeat rewrites it in place with one write. */
const LOCK_BYTES = 1024;

/** Who holds a lock. */
interface LockOwner {
  pid: number;
  host: string;
  /** This boot and pid namespace: a pid means the same process only where both are the same. */
  machine: string;
  /** The process's start (clock ticks since boot, from /proc), or null where unknown. */
  started: number | null;
  nonce: string;
  /** `I/N`. */
  shard: string;
  /** When the lock was taken (ISO time). */
  since: string;
  beat: number;
  /** This boot (`/proc/sys/kernel/random/boot_id`): the same kernel, so the same clock, whatever the PID namespace. */
  boot?: string;
  /** When the last heartbeat was written (ms since the epoch, this machine's clock). */
  beatAt?: number;
}

/** The start time of process `pid` in clock ticks since boot (`/proc/PID/stat`, field 22), or null. */
function startOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
  } catch {
    return null;
  }
}

/** On the same kernel, a lock whose heartbeat is this much older than now is stale: three missed beats. */
const OWN_KERNEL_STALE_MS = 3 * HEARTBEAT_S * 1000;

/** This boot's id (empty where /proc lacks it). */
function bootId(): string {
  return machine().split('/')[0]!;
}

let machineId: string | null = null;
/** This machine: boot id and pid namespace (empty parts where /proc lacks them). */
function machine(): string {
  if (machineId === null) {
    const read = (f: () => string) => {
      try {
        return f().trim();
      } catch {
        return '';
      }
    };
    machineId = `${read(() => readFileSync('/proc/sys/kernel/random/boot_id', 'latin1'))}/${read(() => readlinkSync('/proc/self/ns/pid'))}`;
  }
  return machineId;
}

/** The lock file's name for shard `index` of `count`. */
const lockName = (index: number, count: number): string => (count === 1 ? 'rmsnorm.lock' : `rmsnorm.shard-${index}-of-${count}.lock`);

/** The owner a lock file's text names, or null when it does not parse. */
function ownerOf(text: string): LockOwner | null {
  try {
    const o = JSON.parse(text) as LockOwner;
    return typeof o.pid === 'number' && typeof o.nonce === 'string' ? o : null;
  } catch {
    return null;
  }
}

/** `process N on HOST (shard I/N, since TIME)`: an owner as messages name it (no shard for an unsharded run). */
export const describeOwner = (o: LockOwner): string => `process ${o.pid} on ${o.host} (${o.shard === '0/1' ? '' : `shard ${o.shard}, `}since ${o.since})`;

/** Whether `o` ran on this kernel: same machine (boot and PID namespace), or same boot seen from another namespace. */
const where = (o: LockOwner): 'here' | 'kernel' | 'elsewhere' =>
  o.machine === machine() && o.host === hostname() ? 'here' : o.boot && o.boot === bootId() && typeof o.beatAt === 'number' ? 'kernel' : 'elsewhere';

/** How a waiting run tells that `o` died, in words. */
function judgedBy(o: LockOwner, staleS: number): string {
  const w = where(o);
  if (w === 'here') return 'it is taken over as soon as its process is gone';
  if (w === 'kernel') return `it runs on this machine in another PID namespace: it is presumed dead once its heartbeat has missed ${OWN_KERNEL_STALE_MS / 1000} s`;
  return `it runs on another machine: it is presumed dead once its heartbeat has been still for ${staleS} s (--lock-stale)`;
}

/** Why the dead owner `o` (null: a lock that did not parse) was presumed dead, in words. */
function deadBecause(o: LockOwner | null, staleS: number): string {
  if (!o) return `its lock did not parse and stayed unchanged for ${staleS} s`;
  const w = where(o);
  const last = typeof o.beatAt === 'number' ? `, last heartbeat ${new Date(o.beatAt).toISOString()}` : '';
  if (w === 'here') return `its process is gone${last}`;
  if (w === 'kernel') return `its heartbeat stopped${last} (same machine, another PID namespace)`;
  return `its heartbeat was still for ${staleS} s${last}`;
}

/** How long the lock's liveness checks watch, and what they saw. */
class Watch {
  private seen = new Map<string, { text: string; at: number }>();
  constructor(private readonly staleMs: number) {}

  /** Whether the owner of the lock whose text is `text` is alive. */
  alive(path: string, text: string, o: LockOwner | null): boolean {
    if (o && o.machine === machine() && o.host === hostname()) {
      return alive(o.pid) && (o.started === null || startOf(o.pid) === null || startOf(o.pid) === o.started);
    }
    // The same kernel seen from another PID namespace (a pod retried on the same node): its pid
    // cannot be checked from here, but its clock is this one, so a heartbeat missed for three
    // beats tells.
    if (o && o.boot && o.boot === bootId() && typeof o.beatAt === 'number') return Date.now() - o.beatAt < OWN_KERNEL_STALE_MS;
    // Another machine (or a lock that does not parse): alive while its text keeps changing.
    const last = this.seen.get(path);
    const now = Date.now();
    if (!last || last.text !== text) {
      this.seen.set(path, { text, at: now });
      return true;
    }
    return now - last.at < this.staleMs;
  }
}

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
