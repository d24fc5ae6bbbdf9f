/**
 * The command as real processes, for the tests of what it owns and how it stops: starting it
 * (also as PID 1 of a PID namespace, or as another user), waiting on it, finding its work
 * process, the temporaries each process has, and hashes of trees it must not touch.
 */
import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { npyHeader } from '../dist/node/index.js';

export const BIN = new URL('../bundle/node/bin.js', import.meta.url).pathname;

/** A float32 `.npy` of `rows` × `dim`, its values depending on `seed`. */
export function npy(rows: number, dim: number, seed = 0): Buffer {
  const x = new Float32Array(rows * dim).map((_, k) => Math.sin(k * 0.37 + seed) + 0.25);
  return Buffer.concat([npyHeader([rows, dim]), Buffer.from(x.buffer)]);
}

/** A process started, with what it prints and how it ended. */
export interface Started {
  p: ChildProcess;
  out: string;
  err: string;
  /** When it was started (Date.now()). */
  t0: number;
  done: Promise<{ code: number | null; signal: string | null; ms: number }>;
}

/** Starts `cmd args` with its output captured. */
export function startProcess(cmd: string, args: readonly string[], o: SpawnOptions = {}): Started {
  const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], ...o });
  const t0 = Date.now();
  const r: Started = {
    p, out: '', err: '', t0,
    done: new Promise((ok) => p.on('exit', (code, signal) => ok({ code, signal, ms: Date.now() - t0 }))),
  };
  p.stdout?.on('data', (d: Buffer) => (r.out += d));
  p.stderr?.on('data', (d: Buffer) => (r.err += d));
  return r;
}

/** Starts the command (`node bin.js args`). */
export const startCli = (args: readonly string[], o: SpawnOptions = {}): Started => startProcess(process.execPath, [BIN, ...args], o);

/** Starts the command as PID 1 of a new PID namespace (`unshare --pid --fork --mount-proc`), as a container's command is. */
export const startAsPid1 = (args: readonly string[], o: SpawnOptions = {}): Started =>
  startProcess('unshare', ['--pid', '--fork', '--mount-proc', process.execPath, BIN, ...args], o);

/** Whether this machine lets a test make PID namespaces (root, unshare present). */
export const canUnshare = (): boolean => spawnSync('unshare', ['--pid', '--fork', '--mount-proc', 'true']).status === 0;

/** The pids of the children of `pid` (from /proc). */
export function childrenOf(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((t) =>
      readFileSync(`/proc/${pid}/task/${t}/children`, 'latin1').trim().split(/\s+/).filter(Boolean).map(Number),
    );
  } catch {
    return [];
  }
}

/** Waits until `pred` holds, checking every `everyMs`; throws after `ms`. */
export async function until(pred: () => boolean, ms = 30_000, everyMs = 2): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** The first child of `pid` once it has one (the supervisor's work process; unshare's namespace init). */
export async function childOf(pid: number): Promise<number> {
  let kids: number[] = [];
  await until(() => (kids = childrenOf(pid)).length > 0, 20_000);
  return kids[0]!;
}

/** Whether process `pid` exists (a zombie counts: it is gone once reaped). */
export const exists = (pid: number): boolean => existsSync(`/proc/${pid}`);

/** Whether process `pid` still runs (exists, and is not a zombie: one that has ended, waiting to be reaped). */
export function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** The temporary files under `dir` (every depth), each with the pid in its name. */
export function tempsIn(dir: string): { path: string; pid: number }[] {
  const out: { path: string; pid: number }[] = [];
  const visit = (d: string) => {
    let names: string[];
    try {
      names = readdirSync(d);
    } catch {
      return;
    }
    for (const n of names) {
      const p = join(d, n);
      const m = /\.tmp-(\d+)-[0-9a-f]{8}$/.exec(n);
      if (m) out.push({ path: p, pid: Number(m[1]) });
      else {
        try {
          if (lstatSync(p).isDirectory()) visit(p);
        } catch {
          // gone meanwhile
        }
      }
    }
  };
  visit(dir);
  return out;
}

/**
 * The processes that have a temporary file under `dir` open (not one removed since), by host
 * pid: read from every process's descriptors in /proc.
 */
export function openTemps(dir: string): Set<number> {
  const pids = new Set<number>();
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${p}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      let to: string;
      try {
        to = readlinkSync(`/proc/${p}/fd/${fd}`);
      } catch {
        continue;
      }
      if (to.startsWith(dir) && /\.tmp-\d+-[0-9a-f]{8}$/.test(to)) pids.add(Number(p));
    }
  }
  return pids;
}

/** Every path under `dir` (links as links, not followed) with a hash of what it is. */
export function treeHash(dir: string): string {
  const h = createHash('sha256');
  const visit = (d: string): void => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      const st = lstatSync(p);
      h.update(`${p}\0${st.mode}\0${st.nlink}\0`);
      if (st.isSymbolicLink()) h.update(`link:${readlinkSync(p)}`);
      else if (st.isDirectory()) visit(p);
      else if (st.isFile()) h.update(readFileSync(p));
    }
  };
  visit(dir);
  return h.digest('hex');
}

/** A lock file's text as another run of this tool writes it (`owner` overrides fields). */
export function foreignLock(owner: Record<string, unknown> = {}): string {
  const o = {
    pid: 4242, host: 'other-host', machine: 'another-boot/pid:[4026531836]', started: 12345, nonce: 'feedfacecafebeef',
    shard: '0/1', since: new Date().toISOString(), beat: 1, beatAt: Date.now(), ...owner,
  };
  return JSON.stringify(o).padEnd(1023, ' ') + '\n';
}
