/**
 * Who holds a shard's lock, and how another run tells whether that holder still lives: on the
 * same machine (boot and PID namespace) by its pid and start time; on the same kernel from
 * another PID namespace (a pod retried on its node) by its heartbeat's time, this machine's
 * clock; from another machine by watching the heartbeat change. The words messages use for it.
 * @module
 */
import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { alive } from '../io/atomic.js';

/** Seconds between heartbeats. */
export const HEARTBEAT_S = 5;

/** Who holds a lock. */
export interface LockOwner {
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
export function startOf(pid: number): number | null {
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
export function bootId(): string {
  return machine().split('/')[0]!;
}

let machineId: string | null = null;
/** This machine: boot id and pid namespace (empty parts where /proc lacks them). */
export function machine(): string {
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


/** A string a message may show as it is: at most 255 characters, none of them a control character. */
const plain = (v: unknown): v is string => typeof v === 'string' && v.length <= 255 && !/[\u0000-\u001f\u007f-\u009f]/.test(v);
/** A whole number from 0 to `max`. */
const whole = (v: unknown, max = Number.MAX_SAFE_INTEGER): v is number => Number.isSafeInteger(v) && (v as number) >= 0 && (v as number) <= max;

/**
 * The owner a lock file's text names, or null when it is not a lock of this tool's: text that
 * does not parse, or any field of the wrong type or out of its range (a pid from 1 to 2^22, a
 * nonce of hex digits, a shard `I/N`, names a message can show as they are, a heartbeat's time
 * no later than a heartbeat from now). Such a lock is judged as one that does not parse: by
 * whether its text keeps changing.
 */
export function ownerOf(text: string): LockOwner | null {
  let o: Partial<Record<keyof LockOwner, unknown>>;
  try {
    o = JSON.parse(text) as typeof o;
  } catch {
    return null;
  }
  if (typeof o !== 'object' || o === null || Array.isArray(o)) return null;
  const ok =
    whole(o.pid, 1 << 22) && (o.pid as number) > 0 && plain(o.host) && plain(o.machine) && (o.started === null || whole(o.started)) &&
    typeof o.nonce === 'string' && /^[0-9a-f]{8,64}$/.test(o.nonce) && typeof o.shard === 'string' && /^\d{1,7}\/\d{1,7}$/.test(o.shard) &&
    plain(o.since) && whole(o.beat) && (o.boot === undefined || plain(o.boot)) &&
    (o.beatAt === undefined || (whole(o.beatAt) && (o.beatAt as number) <= Date.now() + HEARTBEAT_S * 1000));
  return ok ? (o as LockOwner) : null;
}

/** `process N on HOST (shard I/N, since TIME)`: an owner as messages name it (no shard for an unsharded run). */
export const describeOwner = (o: LockOwner): string => `process ${o.pid} on ${o.host} (${o.shard === '0/1' ? '' : `shard ${o.shard}, `}since ${o.since})`;

/** Whether `o` ran on this kernel: same machine (boot and PID namespace), or same boot seen from another namespace. */
const where = (o: LockOwner): 'here' | 'kernel' | 'elsewhere' =>
  o.machine === machine() && o.host === hostname() ? 'here' : o.boot && o.boot === bootId() && typeof o.beatAt === 'number' ? 'kernel' : 'elsewhere';

/** How a waiting run tells that `o` died, in words. */
export function judgedBy(o: LockOwner, staleS: number): string {
  const w = where(o);
  if (w === 'here') return 'it is taken over as soon as its process is gone';
  if (w === 'kernel') return `it runs on this machine in another PID namespace: it is presumed dead once its heartbeat has missed ${OWN_KERNEL_STALE_MS / 1000} s`;
  return `it runs on another machine: it is presumed dead once its heartbeat has been still for ${staleS} s (--lock-stale)`;
}

/** Why the dead owner `o` (null: a lock that did not parse) was presumed dead, in words. */
export function deadBecause(o: LockOwner | null, staleS: number): string {
  if (!o) return `its lock did not parse and stayed unchanged for ${staleS} s`;
  const w = where(o);
  const last = typeof o.beatAt === 'number' ? `, last heartbeat ${new Date(o.beatAt).toISOString()}` : '';
  if (w === 'here') return `its process is gone${last}`;
  if (w === 'kernel') return `its heartbeat stopped${last} (same machine, another PID namespace)`;
  return `its heartbeat was still for ${staleS} s${last}`;
}

/** How long the lock's liveness checks watch, and what they saw. */
export class Watch {
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
