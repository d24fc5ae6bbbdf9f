/**
 * One run at a time per output directory and shard: a lock file beside the shard's manifest
 * (`rmsnorm.lock`, or `rmsnorm.shard-I-of-N.lock`), made with `link(2)` so that it appears
 * whole or not at all, naming its owner — pid, host, the process's start time, a random nonce —
 * and rewritten every few seconds by the owner (a heartbeat counter).
 *
 * The lock is a lease with a fence: the run checks that the lock file is still the very file
 * it made (its device and inode, one link) and still names its nonce before every commit
 * ({@link ShardLock.check}: each rename into place, each manifest line, each removal) and at
 * every heartbeat. A run whose lock was taken over or removed, or that could not renew it,
 * commits nothing more and stops within a heartbeat, its signal aborted with the reason
 * (naming the new holder, code `EBUSY`).
 *
 * A second run on a busy shard waits for it (or gives up after `lockWait` seconds). A lock
 * whose owner is gone is taken over (how that is told: lock-owner.ts): on the same machine by
 * its pid and start time, on the same kernel from another PID namespace by its heartbeat's
 * time, from another machine (a shared file system) once the heartbeat has not changed for
 * `lockStale` seconds. Locks of another shard count on the same directory (whose shards
 * overlap this one's) are refused. The lock file is never followed through a link nor read
 * past a few KiB; one that is not a lock of this tool's (a field of the wrong type or range)
 * is judged as one that does not parse.
 *
 * Under the command's supervisor the lock names the supervisor (which outlives the working
 * process) and is the supervisor's to release, once the working process is gone (supervised.ts).
 * @module
 */
import { randomBytes } from 'node:crypto';
import { lstatSync, readSync } from 'node:fs';
import { link, open, readdir, rename, unlink, writeFile, type FileHandle } from 'node:fs/promises';
import { readSmallFile, readSmallFileSync } from '../io/confined.js';
import { hostname } from 'node:os';
import { codeOf, fsError, NormalizeError } from '../io/errors.js';
import type { Fence } from '../io/fence.js';
import { bootId, deadBecause, describeOwner, HEARTBEAT_S, judgedBy, machine, ownerOf, startOf, Watch, type LockOwner } from './lock-owner.js';
import { shown } from '../io/paths.js';
import { EXIT } from '../exit-codes.js';
import { mustEnd, ownerPid, pathText, supervised, supervisorAlive, tell } from '../io/supervised.js';
import { join } from 'node:path';

/** Default seconds after which a lock from another machine whose heartbeat stopped is stale: several missed heartbeats. */
export const STALE_S = 60;
/** A lock file's size: its JSON, padded, so that a heartbeat rewrites it in place with one write. */
const LOCK_BYTES = 1024;
/** Heartbeats in a row that may fail to be written before the run takes its lease as lost. */
const MISSED_BEATS = 2;

/** The lock file's name for shard `index` of `count`. */
const lockName = (index: number, count: number): string => (count === 1 ? 'rmsnorm.lock' : `rmsnorm.shard-${index}-of-${count}.lock`);

/** A lock held: see the module doc. */
export class ShardLock implements Fence {
  private timer: ReturnType<typeof setInterval> | null = null;
  private readonly lostController = new AbortController();
  private missed = 0;
  /** The reason this run lost the lock (null while it holds it). */
  private lostWhy: NormalizeError | null = null;
  /** The change time (ns) of the lock file as {@link check} last read it and found it this run's; -1 before. */
  private readAt = -1n;

  private constructor(
    readonly path: string,
    private readonly me: LockOwner,
    private readonly fh: FileHandle,
    /** The lock file's identity when it was taken: `dev:ino`. */
    private readonly id: string,
    private readonly shardText: string,
  ) {}

  /** Aborted (with a NormalizeError, code `EBUSY`, naming the new holder) when this run loses the lock. */
  get signal(): AbortSignal {
    return this.lostController.signal;
  }

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
    const pid = ownerPid();
    const me: LockOwner = {
      pid, host: hostname(), machine: machine(), started: startOf(pid), nonce: randomBytes(8).toString('hex'),
      shard: `${index}/${count}`, since: new Date().toISOString(), beat: 0, boot: bootId() || undefined, beatAt: Date.now(),
    };
    const watch = new Watch(o.staleS * 1000);
    const t0 = Date.now();
    const shardText = count === 1 ? '' : `shard ${me.shard} of `;
    let told = false;
    for (;;) {
      o.signal?.throwIfAborted();
      const mine = join(outDir, `.${lockName(index, count)}.${me.nonce}`);
      tell({ make: pathText(mine) });
      await writeFile(mine, text(me), { flag: 'wx' }).catch((e: unknown) => {
        tell({ gone: pathText(mine) });
        throw fsError(e, 'write in', outDir);
      });
      tell({ lock: pathText(path), nonce: me.nonce });
      const got = await link(mine, path).then(() => true, (e: unknown) => {
        if (codeOf(e) === 'EEXIST') return false;
        throw fsError(e, 'lock', path);
      }).finally(() => unlink(mine).then(() => tell({ gone: pathText(mine) }), () => {}));
      if (got) {
        const fh = await open(path, 'r+');
        const st = await fh.stat();
        const lock = new ShardLock(path, me, fh, `${st.dev}:${st.ino}`, shardText);
        try {
          lock.check();
          await lock.refuseOtherCounts(outDir, count, watch);
        } catch (e) {
          await lock.release();
          throw e;
        }
        lock.timer = setInterval(() => void lock.beat(), HEARTBEAT_S * 1000);
        lock.timer.unref?.();
        return lock;
      }
      tell({ unlock: pathText(path) });
      const held = await readLock(path);
      if (held === null) continue; // released meanwhile
      const owner = ownerOf(held);
      if (!watch.alive(path, held, owner)) {
        await takeOver(path, held);
        o.onTakeOver?.(owner, deadBecause(owner, o.staleS));
        continue;
      }
      if (Date.now() - t0 >= o.waitS * 1000) {
        throw new NormalizeError(`${shardText}${shown(outDir)} is being written by ${owner ? describeOwner(owner) : 'another run'}; try again when it ends`, 'EBUSY');
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

  /**
   * The fence (see the module doc): throws, and aborts {@link signal}, unless the lock file is
   * still the one this run made, names its nonce, and its supervisor (if any) is there.
   * Synchronous: the commit it guards follows it on this thread.
   */
  check(): void {
    if (this.lostWhy) throw this.lostWhy;
    let why: string | null = null;
    try {
      const st = lstatSync(this.path, { bigint: true });
      if (`${st.dev}:${st.ino}` !== this.id || st.nlink !== 1n) why = this.holder();
      else if (st.ctimeNs !== this.readAt) {
        // The same file: still ours unless something wrote over it in place.
        const b = Buffer.alloc(4 * LOCK_BYTES);
        const owner = ownerOf(b.toString('utf8', 0, readSync(this.fh.fd, b, 0, b.length, 0)));
        if (owner?.nonce !== this.me.nonce) why = owner ? `taken over by ${describeOwner(owner)}` : 'overwritten with something that is not a lock';
        // Any write changes the change time, which no one can set; one made within the clock's
        // tick of the write read here could leave it as it is, so a change time that recent is
        // not trusted to mean "as read" (as git treats a racily clean index entry).
        else if (BigInt(Date.now()) * 1_000_000n - st.ctimeNs > RACY_NS) this.readAt = st.ctimeNs;
      }
    } catch (e) {
      why = codeOf(e) === 'ENOENT' ? 'removed by someone else' : `no longer readable (${codeOf(e) ?? String(e)})`;
    }
    if (why === null && !supervisorAlive()) why = 'no longer owned: the supervising process is gone';
    if (why !== null) this.lose(why);
  }

  /** Who holds the lock now, in words ("taken over by …"), read from the file at its path. */
  private holder(): string {
    try {
      const b = readSmallFileSync(this.path, 4 * LOCK_BYTES, 'the lock');
      const owner = b === null ? null : ownerOf(b.toString('utf8'));
      return b === null ? 'removed by someone else' : owner ? `taken over by ${describeOwner(owner)}` : 'replaced with something that is not a lock';
    } catch {
      return 'replaced with something that is not a lock';
    }
  }

  /** Marks the lock lost for `why` and throws that. */
  private lose(why: string): never {
    this.lostWhy ??= new NormalizeError(`the lock of ${this.shardText}${shown(join(this.path, '..'))} was ${why}: this run stops and commits nothing more`, 'EBUSY');
    this.stopBeating();
    const lost = this.lostWhy;
    // What the loss sets off — the stop of every file in flight (the abort's listeners run
    // synchronously), the end the supervisor is asked for — follows once the step that checked
    // has seen the throw: a temporary file made just before the check is removed first.
    queueMicrotask(() => {
      // Once: a failed heartbeat and a failed check may both have found the loss by now.
      if (this.lostController.signal.aborted) return;
      tell({ unlock: pathText(this.path) });
      // Under a supervisor the process ends within its grace, whatever reads are in flight.
      mustEnd(EXIT.busy.code, lost);
      this.lostController.abort(lost);
    });
    throw lost;
  }

  /** Rewrites the lock with the next beat, then checks it is still this run's. */
  private async beat(): Promise<void> {
    if (this.lostWhy) return;
    this.me.beat++;
    this.me.beatAt = Date.now();
    try {
      await this.fh.write(text(this.me), 0, 'utf8');
      this.missed = 0;
    } catch (e) {
      if (++this.missed >= MISSED_BEATS) {
        try {
          this.lose(`not renewed: ${MISSED_BEATS} heartbeats in a row could not be written (${codeOf(e) ?? String(e)})`);
        } catch {
          return;
        }
      }
    }
    try {
      this.check();
    } catch {
      // lost: the signal says why
    }
  }

  private stopBeating(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /**
   * Gives the lock up (only if it is still this run's). Under a supervisor it is left for the
   * supervisor, which removes it once this process is gone.
   */
  async release(): Promise<void> {
    this.stopBeating();
    await this.fh.close().catch(() => {});
    if (this.lostWhy || supervised()) return;
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

/**
 * How old (ns, by this machine's clock) a change time must be for the lock's content read then
 * to stand for it: well past a file system's timestamp tick (a jiffy, 1–10 ms). A check reads
 * the file only when its change time moved; that took a read and a JSON parse off every commit
 * (about half of a check's 14 µs in a profile of 2000 one-row files on a 2-core VM).
 */
const RACY_NS = 100_000_000n;

/** A lock's text: its owner's JSON, padded to a fixed size. */
const text = (o: LockOwner): string => JSON.stringify(o).padEnd(LOCK_BYTES - 1, ' ') + '\n';

/**
 * Removes the stale lock at `path` whose text was `held`, unless it changed meanwhile (another
 * run took it over first): moved aside, checked, and put back if it is not the stale one.
 */
async function takeOver(path: string, held: string): Promise<void> {
  const aside = `${path}.stale-${randomBytes(4).toString('hex')}`;
  tell({ make: pathText(aside) });
  try {
    await rename(path, aside);
  } catch {
    tell({ gone: pathText(aside) });
    return; // gone already
  }
  const moved = await readLockOrNull(aside);
  if (moved !== null && moved !== held) await link(aside, path).catch(() => {});
  await unlink(aside).catch(() => {});
  tell({ gone: pathText(aside) });
}
