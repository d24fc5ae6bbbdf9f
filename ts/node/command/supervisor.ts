/**
 * The command's first process: it runs the command's work in a child process and ends it for
 * certain, as tini and dumb-init do for a container's command
 * (https://github.com/krallin/tini, https://github.com/Yelp/dumb-init). It is what makes a stop
 * work whatever this process's pid is: the kernel drops a signal whose action is the default
 * when it is sent to its PID namespace's first process (PID 1, a container's command) from
 * inside, so a process cannot end itself that way there — but it can always end its child.
 *
 * - SIGTERM, SIGINT and SIGHUP are forwarded to the child, which stops its run; after
 *   {@link STOP_GRACE_MS} the child is killed (SIGKILL), whatever it is waiting for (a read
 *   from a stalled disk or pipe).
 * - The child tells this process, before it makes them, of every temporary file and of its
 *   lock (supervised.ts). Once the child is gone — reaped: it can write nothing more — this
 *   process removes the temporaries left and releases the lock, in that order, prints the stop
 *   message once and exits 128 + the signal's number (130, 143, 129).
 * - A child that must end (its lock was lost) asks to: it is killed after the same grace if it
 *   has not ended by then, and this process says why and exits with the code it asked for.
 * - The child's own exit code is passed on; a child killed by something else (the kernel's
 *   out-of-memory killer) is reported, and cleaned up after the same way.
 *
 * It loads nothing but Node's own modules: the work process loads the package.
 * @module
 */
import { spawn } from 'node:child_process';
import { closeSync, constants, openSync, readSync, unlinkSync } from 'node:fs';
import { CHANNEL_ENV, SIGNAL_SLOT, type Tell } from '../io/supervised.js';
import { bySignal, EXIT, STOPS } from '../exit-codes.js';

/**
 * Milliseconds a stopped child has to end by itself before it is killed. Nothing depends on
 * its ending by itself — the temporaries and the lock are this process's to clean up — so this
 * only bounds how long a stop takes (a scheduler's grace, GNU parallel's --termseq, a pod's
 * terminationGracePeriodSeconds, is then never what ends the run).
 */
const STOP_GRACE_MS = 250;


/**
 * The work process's V8 background threads (its compilers and collector): one, unless the
 * command was started with `--v8-pool-size`. The work process's JavaScript only coordinates —
 * the normalizing runs in wasm on a compute thread per core — and Node's default of 4 compiler
 * threads took CPU from those and from the main thread. Alternating runs on a 2-core VM, a
 * dataset of 2000 one-row files over one such file: 0.85–1.15 s more with 4 threads, 0.80–0.95 s
 * with 2, 0.59–1.00 s with 1; a 1 GiB file took the same with 1 and 4.
 */
function v8Threads(execArgv: readonly string[]): string[] {
  return execArgv.some((a) => a.startsWith('--v8-pool-size')) ? [] : ['--v8-pool-size=1'];
}

/** The largest lock file read back to release it (its owner's JSON, padded). */
const LOCK_READ_BYTES = 4096;

/** Removes the lock at `path` if it still names `nonce`: read without following a link or waiting on a FIFO. */
function releaseLock(path: Buffer, nonce: string): void {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return; // gone, a link, or unreadable: nothing of the child's to remove
  }
  let text = '';
  try {
    const b = Buffer.alloc(LOCK_READ_BYTES);
    text = b.toString('utf8', 0, readSync(fd, b, 0, b.length, 0));
  } catch {
    return;
  } finally {
    closeSync(fd);
  }
  try {
    if ((JSON.parse(text) as { nonce?: unknown }).nonce === nonce) unlinkSync(path);
  } catch {
    // another run's, or no longer there
  }
}

/**
 * Runs `entry` (the command's script) with `argv` in a child process under supervision (see
 * the module doc); resolves to the exit code this process should end with.
 */
export function supervise(entry: string, argv: readonly string[]): Promise<number> {
  /** Temporaries the child made and has not renamed or removed, by their bytes (latin1). */
  const temps = new Map<string, Buffer>();
  /** Locks the child holds or is taking, by path: the nonce each names. */
  const locks = new Map<string, { path: Buffer; nonce: string }>();
  let stopText: string | null = null;
  let stoppedBy: string | null = null;
  /** The code and message of an end the child asked for (endWith). */
  let ending: { code: number; text: string } | null = null;

  const heard = (m: Tell): void => {
    if ('make' in m) temps.set(Buffer.from(m.make, 'base64').toString('latin1'), Buffer.from(m.make, 'base64'));
    else if ('gone' in m) temps.delete(Buffer.from(m.gone, 'base64').toString('latin1'));
    else if ('lock' in m) locks.set(m.lock, { path: Buffer.from(m.lock, 'base64'), nonce: m.nonce });
    else if ('unlock' in m) locks.delete(m.unlock);
    else if ('stopText' in m) stopText = m.stopText;
    else if ('stoppedBy' in m) stoppedBy ??= m.stoppedBy;
    else if ('endWith' in m && ending === null && stoppedBy === null) {
      ending = { code: m.endWith, text: m.text };
      killAfterGrace();
    }
  };
  let killTimer: ReturnType<typeof setTimeout> | null = null;
  let killed = false;
  const killAfterGrace = () => {
    killTimer ??= setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, STOP_GRACE_MS);
  };
  const onStop = (sig: (typeof STOPS)[number]) => () => {
    if (stoppedBy === null) stoppedBy = sig;
    if (killTimer !== null) {
      killed = true;
      child.kill('SIGKILL'); // a second stop: at once
      return;
    }
    child.kill(sig);
    killAfterGrace();
  };
  // The handlers first: a stop signal from now on is forwarded, never this process's end by default.
  const handlers = STOPS.map((sig) => [sig, onStop(sig)] as const);
  for (const [sig, h] of handlers) process.on(sig, h);
  const child = spawn(process.execPath, [...v8Threads(process.execArgv), ...process.execArgv, entry, ...argv], {
    stdio: ['inherit', 'inherit', 'inherit', 'pipe'],
    env: { ...process.env, [CHANNEL_ENV]: `3:${process.pid}` },
  });

  let pending = '';
  const channel = child.stdio[3] as NodeJS.ReadableStream & { on(e: 'error', f: () => void): unknown };
  channel.setEncoding('latin1');
  channel.on('data', (s: string) => {
    pending += s;
    for (let nl = pending.indexOf('\n'); nl >= 0; nl = pending.indexOf('\n')) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      try {
        heard(JSON.parse(Buffer.from(line, 'latin1').toString('utf8')) as Tell);
      } catch {
        // not a message of the child's: ignored
      }
    }
  });
  channel.on('error', () => {});

  return new Promise<number>((resolve) => {
    child.on('error', (e) => {
      process.stderr.write(`rmsnorm-wasm: error: cannot start the work process: ${e.message}\n`);
      resolve(EXIT.failed.code);
    });
    // 'close': the child has exited and its channel is read to the end.
    child.on('close', (code, signal) => {
      if (killTimer !== null) clearTimeout(killTimer);
      for (const p of temps.values()) {
        try {
          unlinkSync(p);
        } catch {
          // renamed into place, or removed already
        }
      }
      for (const l of locks.values()) releaseLock(l.path, l.nonce);
      for (const [sig, h] of handlers) process.off(sig, h);
      if (ending !== null && stoppedBy === null && killed) {
        process.stderr.write(ending.text);
        resolve(ending.code);
      } else if (stoppedBy !== null) {
        process.stderr.write((stopText ?? `rmsnorm-wasm: stopped by ${SIGNAL_SLOT}\n`).replaceAll(SIGNAL_SLOT, stoppedBy));
        resolve(bySignal(stoppedBy));
      } else if (signal !== null && !(killed && ending !== null)) {
        process.stderr.write(`rmsnorm-wasm: error: the work process was killed by ${signal}${signal === 'SIGKILL' ? ' (out of memory, or killed)' : ''}; its temporary files were removed\n`);
        resolve(bySignal(signal));
      } else resolve(code ?? EXIT.failed.code);
    });
  });
}
