/**
 * Starting one pool worker in Node (worker_threads) or a browser (module Web Worker), behind
 * one small handle: messages, death, termination, and (Node) whether it keeps the process alive.
 * @module
 */
import { isNode } from '../../glue/platform.js';
import { nodeWorkerUrl, startWebWorker } from '../../entries.js';
import type { AttachMessage, InitMessage, ResumeMessage, WorkerMessage } from '../messages.js';

/** A running worker. */
export interface WorkerHandle {
  post(m: InitMessage | AttachMessage | ResumeMessage): void;
  /** Ends the worker; resolves when it has stopped (Node) or at once (browsers). */
  terminate(): Promise<void>;
  /**
   * Whether a resolved terminate() (or a reported death) means the thread has stopped running
   * (Node), so that its memory may be reused. Browsers give no such guarantee.
   */
  readonly confirmsStop: boolean;
  /** Ends the worker as a crash would: its death is reported (tests). */
  kill(): void;
  /** Node: let the process exit while this worker is idle (unref), or not (ref). */
  keepAlive(on: boolean): void;
}

/** What the pool hears from a worker. */
export interface WorkerEvents {
  message(m: WorkerMessage): void;
  /** The worker died (threw, or exited without being asked). */
  death(reason: string): void;
}

/** Flags that load module hooks (with a value, `--flag=v` or `--flag v`), not passed to workers. */
const HOOK_FLAGS = ['--require', '-r', '--import', '--loader', '--experimental-loader'];

/** The exec flags Node workers get, once known to be accepted (see workerExecArgv). */
let acceptedExecArgv: string[] | null = null;

/**
 * The process's exec flags that a worker accepts. Workers should run like the process (e.g.
 * `--enable-source-maps`, `--conditions`), except module hooks (`--require`, `--import`,
 * `--loader`: see below); and Node refuses process-wide and V8 flags in a
 * Worker's execArgv (`--max-old-space-size`, `--expose-gc`, `--stack-size`, `--title`, ...:
 * ERR_WORKER_INVALID_EXEC_ARGV), and `--input-type` (node -e with ESM) would stop a file-based
 * worker from starting. Node's error lists the flags it refused: after one refusal
 * (`refused`, the error's message) they are left out, for every later worker too.
 */
function workerExecArgv(refused?: string): string[] {
  if (acceptedExecArgv && refused === undefined) return acceptedExecArgv;
  let argv: string[] = [];
  const all = process.execArgv;
  for (let i = 0; i < all.length; i++) {
    const a = all[i]!;
    if (a.startsWith('--input-type')) continue;
    // Module hooks (tsx, ts-node, instrumentation) are the application's: the worker runs only
    // this package's plain JavaScript, and loading them in every worker made each one start
    // in hundreds of milliseconds under tsx.
    const hook = HOOK_FLAGS.find((f) => a === f || a.startsWith(f + '='));
    if (hook) {
      if (a === hook) i++; // its value is the next argument
      continue;
    }
    argv.push(a);
  }
  if (refused !== undefined) {
    const listed = refused.slice(refused.indexOf('flags:') + 'flags:'.length).split(',').map((f) => f.trim());
    argv = argv.filter((a) => !listed.includes(a));
  }
  acceptedExecArgv = argv;
  return argv;
}

/** Starts a worker running pool/worker-node.js (Node) or pool/worker.js (browsers): see entries.ts. */
export async function spawnWorker(events: WorkerEvents): Promise<WorkerHandle> {
  if (isNode) {
    const { Worker } = await import(/* @vite-ignore */ 'node:worker_threads');
    const url = nodeWorkerUrl();
    let w: import('node:worker_threads').Worker;
    try {
      w = new Worker(url, { execArgv: workerExecArgv() });
    } catch (e) {
      if ((e as { code?: string }).code !== 'ERR_WORKER_INVALID_EXEC_ARGV') throw e;
      w = new Worker(url, { execArgv: workerExecArgv(String((e as Error).message)) });
    }
    let stopping = false;
    w.on('message', (m: WorkerMessage) => events.message(m));
    w.on('error', (e: Error) => {
      if (!stopping) events.death(`it threw: ${e?.message ?? String(e)}`);
      stopping = true;
    });
    w.on('exit', (code: number) => {
      if (!stopping) events.death(`it exited with code ${code}`);
      stopping = true;
    });
    return {
      post: (m) => w.postMessage(m),
      async terminate() {
        stopping = true;
        await w.terminate();
      },
      kill: () => void w.terminate(),
      keepAlive: (on) => (on ? w.ref() : w.unref()),
      confirmsStop: true,
    };
  }
  const w = startWebWorker();
  let stopped = false;
  w.addEventListener('message', (e: MessageEvent) => events.message(e.data as WorkerMessage));
  w.addEventListener('error', (e: ErrorEvent) => {
    e.preventDefault();
    if (!stopped) events.death(`it threw: ${e.message || 'error event'}`);
    stopped = true;
  });
  w.addEventListener('messageerror', () => {
    if (!stopped) events.death('a message to it could not be deserialized');
    stopped = true;
  });
  return {
    post: (m) => w.postMessage(m),
    async terminate() {
      stopped = true;
      w.terminate();
    },
    kill() {
      w.terminate(); // fires no event in browsers: report the death ourselves
      if (!stopped) events.death('it was terminated');
      stopped = true;
    },
    keepAlive: () => {},
    confirmsStop: false,
  };
}
