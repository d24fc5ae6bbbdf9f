/**
 * The working process's side of the command's supervision (supervisor.ts runs the command's work
 * in a child process and ends it for certain): before this process makes anything it would
 * leave behind if killed — a temporary file, a lock — it tells its supervisor, with a
 * synchronous write to the channel the supervisor opened (descriptor 3). A line written there
 * before the file is made is read by the supervisor even if this process is killed the next
 * instant, so the supervisor removes every temporary and releases the lock once this process is
 * gone, whatever killed it: nothing is left, and no lock is released while this process could
 * still write.
 *
 * Without a supervisor (the API used from a program, or a process started some other way) every
 * call here does nothing and this process is its own owner.
 * @module
 */
import { writeSync } from 'node:fs';
import { Socket } from 'node:net';
import { bytesOf, type FsPath } from './paths.js';

/**
 * The environment variable through which the supervisor hands its child the channel:
 * `FD:PID`, the descriptor and the supervisor's pid (the child's parent; anything else, and the
 * variable is ignored).
 */
export const CHANNEL_ENV = 'RMSNORM_WASM_SUPERVISOR';

/** Where a stop message names the signal that stopped the run. */
export const SIGNAL_SLOT = '{signal}';

/** What the child tells its supervisor, one JSON line each. Paths are their bytes in base64. */
export type Tell =
  /** A temporary file is about to be made at `make`. */
  | { make: string }
  /**
   * The temporary `gone` has been renamed into place or removed. Sent with the next message,
   * not alone: until then the supervisor still lists a path where nothing is, and removing it
   * finds nothing. (Each write to the channel wakes the supervisor, tens of µs on a 2-core VM:
   * this is one wake-up a file fewer.)
   */
  | { gone: string }
  /** The lock at `lock`, naming `nonce`, is about to be taken. */
  | { lock: string; nonce: string }
  /** The lock at `unlock` is no longer this process's (released, or lost to another run). */
  | { unlock: string }
  /** What to print if the run is stopped by a signal ({@link SIGNAL_SLOT} for the signal's name). */
  | { stopText: string }
  /** The child was stopped by this signal (sent to it directly, not through the supervisor). */
  | { stoppedBy: string }
  /**
   * The child must end now, with this exit code: killed after the grace if it does not end
   * by itself, and then the supervisor prints `text` for it.
   */
  | { endWith: number; text: string };

interface Channel {
  readonly fd: number;
  readonly pid: number;
  /** False once the supervisor is gone (its end of the channel closed). */
  alive: boolean;
}

let channel: Channel | null | undefined;
const goneListeners: (() => void)[] = [];

/** The channel to this process's supervisor, or null when it has none. */
function channelOf(): Channel | null {
  if (channel !== undefined) return channel;
  const m = /^(\d{1,9}):(\d{1,9})$/.exec(process.env[CHANNEL_ENV] ?? '');
  channel = m && Number(m[2]) === process.ppid ? { fd: Number(m[1]), pid: Number(m[2]), alive: true } : null;
  if (channel) {
    // The supervisor's end closes when it dies: the channel reads end of file.
    const c = channel;
    const watch = new Socket({ fd: c.fd, readable: true, writable: false });
    watch.unref();
    watch.on('data', () => {});
    watch.on('error', () => supervisorGone(c));
    watch.on('end', () => supervisorGone(c));
  }
  return channel;
}

function supervisorGone(c: Channel): void {
  if (!c.alive) return;
  c.alive = false;
  for (const f of goneListeners.splice(0)) f();
}

/** Whether this process runs under the command's supervisor. */
export const supervised = (): boolean => channelOf() !== null;

/**
 * The process that owns what this one makes — whose life the lock names: the supervisor when
 * there is one (it outlives this process and releases the lock), else this process.
 */
export const ownerPid = (): number => channelOf()?.pid ?? process.pid;

/** False once this process's supervisor is gone: it may then commit nothing more (its lock names a dead process). */
export const supervisorAlive = (): boolean => channelOf()?.alive ?? true;

/** Calls `f` once if the supervisor goes away before this process does. */
export function onSupervisorGone(f: () => void): void {
  const c = channelOf();
  if (!c) return;
  if (!c.alive) f();
  else goneListeners.push(f);
}

/** Sleeps `ms` on this thread (a full channel is drained by the supervisor within microseconds). */
const pause = (ms: number): void => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms) as unknown as void;

/** `gone` lines not yet sent (see {@link Tell}). */
let held = '';

/** Writes one message to the supervisor, synchronously (no-op without one, or once it is gone); a `gone` goes with the next. */
export function tell(m: Tell): void {
  const c = channelOf();
  if (!c || !c.alive) return;
  const line = JSON.stringify(m) + '\n';
  if ('gone' in m) {
    held += line;
    return;
  }
  const b = Buffer.from(held + line);
  held = '';
  let put = 0;
  while (put < b.length) {
    try {
      put += writeSync(c.fd, b, put, b.length - put);
    } catch (e) {
      const code = (e as { code?: string }).code;
      if (code === 'EAGAIN') pause(1);
      else return supervisorGone(c);
    }
  }
}

/**
 * Asks the supervisor to end this process within its grace, whatever it is waiting for, and
 * to exit with `code` saying `reason` (a run that may no longer write: its lock was lost).
 * Without a supervisor, nothing: the caller's promise settles once the work in flight does.
 */
export function mustEnd(code: number, reason: Error): void {
  tell({ endWith: code, text: `rmsnorm-wasm: error: ${reason.message.replace(/^rmsnorm-wasm: /, '')}\n` });
}

/** A path as a message carries it: its bytes, base64. */
export const pathText = (p: FsPath): string => bytesOf(p).toString('base64');
