/**
 * The batch tool's three central promises, tested the way they break, with real processes:
 * a stop is a stop whatever the tool's pid (PID 1 of a PID namespace, as a container's command
 * is; reads stalled on a FIFO or a throttled volume); one writer per shard (a takeover, a stop
 * with an immediate replacement, a lock replaced under a run: sampled at every instant); nothing
 * committed by a run that lost its lock or its supervisor; the lock released only once the
 * process that wrote is gone.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, linkSync, openSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AtomicFile } from '../dist/node/io/atomic.js';
import { ShardLock } from '../dist/node/dataset/lock.js';
import { CHANNEL_ENV } from '../dist/node/io/supervised.js';
import {
  BIN, canUnshare, childOf, exists, foreignLock, npy, openTemps, running, startAsPid1, startCli, startProcess, tempsIn, treeHash, until, type Started,
} from './processes.js';

const root = mkdtempSync(join(tmpdir(), 'rmsnorm-owner-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const caseDir = (): string => {
  const d = join(root, `c${n++}`);
  mkdirSync(d);
  return d;
};

const made = new Map<number, Buffer>();
/** A folder of `count` .npy files of `rows` × 1024 float32 (one file's values, each file's first row its own). */
function dataset(dir: string, count: number, rows: number): void {
  mkdirSync(dir, { recursive: true });
  if (!made.has(rows)) made.set(rows, npy(rows, 1024));
  const base = made.get(rows)!;
  for (let i = 0; i < count; i++) {
    const b = Buffer.from(base);
    b.writeFloatLE(i, 128);
    writeFileSync(join(dir, `f${String(i).padStart(3, '0')}.npy`), b);
  }
}

/** The lines of `err` that say the run was stopped. */
const stopLines = (err: string): string[] => err.split('\n').filter((l) => /stopped by SIG/.test(l));

const PID_NS = canUnshare();
if (!PID_NS) console.warn('ownership.test.ts: no PID namespaces here (not root, or no unshare): the PID 1 cases are skipped');

/**
 * A volume whose reads run at `BPS` bytes per second: an ext4 image on a loop device, read
 * through a cgroup v1 blkio throttle. Root only; null where it cannot be made.
 */
const BPS = 4 << 20;
let slow: { mnt: string; cgroup: string; undo: () => void } | null = null;
beforeAll(() => {
  const cg = '/sys/fs/cgroup/blkio';
  if (process.getuid?.() !== 0 || !existsSync(`${cg}/cgroup.procs`)) return;
  const d = join(root, 'volume');
  mkdirSync(d);
  const img = join(d, 'img');
  const mnt = join(d, 'mnt');
  mkdirSync(mnt);
  const sh = (cmd: string) => spawnSync('sh', ['-c', cmd], { encoding: 'utf8' });
  if (sh(`truncate -s 160M ${img} && mkfs.ext4 -q -F ${img}`).status !== 0) return;
  const loop = sh(`losetup -f --show ${img}`).stdout.trim();
  if (!loop || sh(`mount ${loop} ${mnt}`).status !== 0) return;
  const mm = sh(`stat -c '%t:%T' ${loop}`).stdout.trim().split(':').map((h) => parseInt(h, 16));
  const cgroup = `${cg}/rmsnorm-test-${process.pid}`;
  mkdirSync(cgroup);
  writeFileSync(`${cgroup}/blkio.throttle.read_bps_device`, `${mm[0]}:${mm[1]} ${BPS}\n`);
  slow = {
    mnt, cgroup,
    undo: () => {
      sh(`umount ${mnt}; losetup -d ${loop}`);
      rmSync(cgroup, { recursive: true, force: true });
    },
  };
});
afterAll(() => slow?.undo());

/** Drops the page cache, so that the slow volume's files are read from it again. */
const coldCache = (): void => {
  spawnSync('sync');
  writeFileSync('/proc/sys/vm/drop_caches', '3\n');
};

/** Starts `args` as PID 1 of a new PID namespace in the slow volume's cgroup. */
const startThrottled = (args: readonly string[], o: { cwd?: string } = {}): Started =>
  startProcess('sh', ['-c', `echo $$ > ${slow!.cgroup}/cgroup.procs && exec unshare --pid --fork --mount-proc "$@"`, 'sh', process.execPath, BIN, ...args], o);

describe('a stop as PID 1', () => {
  it.skipIf(!PID_NS)('SIGTERM with a read stalled on a FIFO ends it in at most 0.5 s: 143, one message, no temporary', async () => {
    const d = caseDir();
    const whole = npy(64, 1024);
    writeFileSync(join(d, 'part.npy'), whole.subarray(0, whole.length / 2)); // a header and half the rows, then nothing
    expect(spawnSync('mkfifo', [join(d, 'in.fifo')]).status).toBe(0);
    // Opened for reading and writing here, so that a writer holds it open from the start.
    const writer = startProcess('sh', ['-c', 'cat part.npy; exec sleep 60'], { cwd: d, stdio: ['ignore', openSync(join(d, 'in.fifo'), 'r+'), 'ignore'] });
    const r = startAsPid1(['normalize', 'in.fifo', 'out.npy'], { cwd: d });
    const init = await childOf(r.p.pid!);
    expect(readFileSync(`/proc/${init}/status`, 'latin1')).toMatch(/^NSpid:\s+\d+\s+1$/m);
    await until(() => tempsIn(d).length > 0, 20_000);
    await new Promise((ok) => setTimeout(ok, 150)); // the read of the missing rows is in flight
    const t = Date.now();
    process.kill(init, 'SIGTERM');
    const end = await r.done;
    const took = Date.now() - t;
    writer.p.kill('SIGKILL');
    expect(end.code, r.err).toBe(143);
    expect(took).toBeLessThanOrEqual(500);
    expect(stopLines(r.err)).toEqual(['rmsnorm-wasm: stopped by SIGTERM; no output was written']);
    expect(readdirSync(d).filter((f) => f.includes('.tmp-') || f === 'out.npy')).toEqual([]);
  }, 60_000);

  it.skipIf(!PID_NS)('SIGINT and SIGHUP as PID 1 end it too, with 130 and 129', async () => {
    for (const [sig, code] of [['SIGINT', 130], ['SIGHUP', 129]] as const) {
      const d = caseDir();
      dataset(join(d, 'in'), 40, 4096);
      const r = startAsPid1(['normalize', 'in', '--out-dir', 'out', '--threads', '1'], { cwd: d });
      const init = await childOf(r.p.pid!);
      await until(() => tempsIn(join(d, 'out')).length > 0, 20_000);
      const t = Date.now();
      process.kill(init, sig);
      const end = await r.done;
      expect(end.code, r.err).toBe(code);
      expect(Date.now() - t).toBeLessThanOrEqual(500);
      expect(stopLines(r.err)).toHaveLength(1);
      expect(readdirSync(join(d, 'out')).filter((f) => f.includes('.tmp-') || f.endsWith('.lock'))).toEqual([]);
    }
  }, 60_000);

  it.skipIf(!PID_NS)('a dataset on a throttled volume: SIGTERM ends it in at most 0.5 s, no temporary, and the lock is released only after the work process is gone', async (ctx) => {
    if (!slow) ctx.skip();
    const v = slow!;
    const inDir = join(v.mnt, `in-${n}`);
    dataset(inDir, 6, 2048); // 8 MiB each: seconds of reads at 4 MB/s
    coldCache();
    const out = join(caseDir(), 'out');
    const r = startThrottled(['normalize', inDir, '--out-dir', out, '--checksum']);
    const init = await childOf(r.p.pid!);
    const work = await childOf(init);
    await until(() => tempsIn(out).length > 0, 20_000);
    await new Promise((ok) => setTimeout(ok, 300));
    const lock = join(out, 'rmsnorm.lock');
    expect(existsSync(lock)).toBe(true);
    const t = Date.now();
    process.kill(init, 'SIGTERM');
    // Sampled as fast as this process can: when the work process was last seen, when the lock first was not.
    let workSeen = 0;
    let lockGone = 0;
    while (Date.now() - t < 2000 && lockGone === 0) {
      const now = performance.now();
      if (exists(work)) workSeen = now;
      if (!existsSync(lock)) lockGone = now;
    }
    const end = await r.done;
    expect(end.code, r.err).toBe(143);
    expect(Date.now() - t).toBeLessThanOrEqual(500);
    expect(lockGone, 'the lock was released').toBeGreaterThan(0);
    expect(lockGone, 'after the work process was gone').toBeGreaterThan(workSeen);
    expect(stopLines(r.err)).toHaveLength(1);
    expect(tempsIn(out)).toEqual([]);
  }, 90_000);
});

describe('one writer per shard', () => {
  it('a stop with an immediate replacement: at no sampled instant do the two runs both have temporaries; the second starts once the first is gone', async () => {
    const d = caseDir();
    dataset(join(d, 'in'), 40, 4096);
    const out = join(d, 'out');
    const a = startCli(['normalize', 'in', '--out-dir', 'out', '--threads', '1'], { cwd: d });
    const aWork = await childOf(a.p.pid!);
    await until(() => tempsIn(out).some((t) => t.pid === aWork), 20_000);
    a.p.kill('SIGTERM');
    const b = startCli(['normalize', 'in', '--out-dir', 'out', '--threads', '1'], { cwd: d });
    const bWork = await childOf(b.p.pid!);
    let bothAt = -1;
    let samples = 0;
    let bBeforeAGone = false;
    let bEnded = false;
    void b.done.then(() => (bEnded = true));
    while (!bEnded) {
      const pids = new Set(tempsIn(out).map((t) => t.pid));
      const open = openTemps(out);
      if ((pids.has(aWork) || open.has(aWork)) && (pids.has(bWork) || open.has(bWork))) bothAt = samples;
      if ((pids.has(bWork) || open.has(bWork)) && exists(aWork)) bBeforeAGone = true;
      samples++;
      await new Promise((ok) => setTimeout(ok, 1));
    }
    expect((await a.done).code, a.err).toBe(143);
    expect((await b.done).code, b.err).toBe(0);
    expect(samples).toBeGreaterThan(50);
    expect(bothAt, 'a sample with both runs\' temporaries').toBe(-1);
    expect(bBeforeAGone, 'the second wrote while the first still lived').toBe(false);
    expect(tempsIn(out)).toEqual([]);
  }, 120_000);

  it('a lock replaced under a run (another host took the shard): the run commits nothing more, removes its temporaries, exits 75 naming the holder, and leaves the other\'s lock', async () => {
    const d = caseDir();
    dataset(join(d, 'in'), 40, 4096);
    const out = join(d, 'out');
    const a = startCli(['normalize', 'in', '--out-dir', 'out', '--threads', '1'], { cwd: d });
    await until(() => tempsIn(out).length > 0, 20_000);
    await new Promise((ok) => setTimeout(ok, 200));
    const theirs = foreignLock({ host: 'other-host', pid: 777 });
    writeFileSync(join(d, 'their.lock'), theirs);
    const t = Date.now();
    renameSync(join(d, 'their.lock'), join(out, 'rmsnorm.lock'));
    await new Promise((ok) => setTimeout(ok, 20));
    const before = new Set(readdirSync(out).filter((f) => f.endsWith('.npy')));
    const end = await a.done;
    expect(end.code, a.err).toBe(75);
    expect(a.err).toMatch(/taken over by process 777 on other-host .*commits nothing more/);
    const after = readdirSync(out).filter((f) => f.endsWith('.npy'));
    expect(after.filter((f) => !before.has(f)), 'outputs renamed into place after the takeover').toEqual([]);
    const lines = readFileSync(join(out, 'manifest.jsonl'), 'utf8').trim().split('\n').filter(Boolean);
    for (const l of lines) expect((JSON.parse(l) as { recordedAt: number }).recordedAt).toBeLessThan(t + 20);
    expect(readFileSync(join(out, 'rmsnorm.lock'), 'utf8')).toBe(theirs);
    expect(tempsIn(out)).toEqual([]);
  }, 120_000);

  it('a lock replaced while no file commits (reads on a throttled volume): the run stops within a heartbeat, exit 75', async (ctx) => {
    if (!slow) ctx.skip();
    const inDir = join(slow!.mnt, `one-${n}`);
    dataset(inDir, 1, 16384); // 64 MiB: 16 s of reads
    coldCache();
    const out = join(caseDir(), 'out');
    const a = startThrottled(['normalize', inDir, '--out-dir', out, '--threads', '1']);
    await until(() => tempsIn(out).length > 0, 20_000);
    writeFileSync(join(out, '..', 'their.lock'), foreignLock());
    const t = Date.now();
    renameSync(join(out, '..', 'their.lock'), join(out, 'rmsnorm.lock'));
    const end = await a.done;
    expect(end.code, a.err).toBe(75);
    expect(Date.now() - t).toBeLessThan(5000 + 1500);
    expect(tempsIn(out)).toEqual([]);
    expect(readdirSync(out).filter((f) => f.endsWith('.npy'))).toEqual([]);
  }, 60_000);

  it.skipIf(!PID_NS)('a frozen owner taken over from another PID namespace, then thawed: it commits nothing and exits 75; at no instant do both have temporaries open', async () => {
    const d = caseDir();
    dataset(join(d, 'in'), 24, 4096);
    const out = join(d, 'out');
    const a = startAsPid1(['normalize', 'in', '--out-dir', 'out', '--threads', '1'], { cwd: d });
    const aInit = await childOf(a.p.pid!);
    const aWork = await childOf(aInit);
    await until(() => tempsIn(out).length > 0, 20_000);
    // Frozen as a paused VM or a stuck mount freezes a process: its heartbeat stops.
    for (const pid of [a.p.pid!, aInit, aWork]) process.kill(pid, 'SIGSTOP');
    const b = startAsPid1(['normalize', 'in', '--out-dir', 'out', '--threads', '1'], { cwd: d });
    let bEnded = false;
    void b.done.then(() => (bEnded = true));
    let both = 0;
    let thawed = false;
    let bWork = 0;
    while (!bEnded) {
      const open = openTemps(out);
      if (!bWork && open.size > 0) for (const p of open) if (p !== aWork) bWork = p;
      if (bWork && !thawed) {
        for (const pid of [a.p.pid!, aInit, aWork]) process.kill(pid, 'SIGCONT');
        thawed = true;
      }
      if (open.has(aWork) && bWork && open.has(bWork)) both++;
      await new Promise((ok) => setTimeout(ok, 2));
    }
    expect((await b.done).code, b.err).toBe(0);
    expect(b.err).toMatch(/took over the lock of process 1 on .*presumed dead: its heartbeat stopped/);
    const aEnd = await a.done;
    expect(aEnd.code, a.err).toBe(75);
    expect(a.err).toMatch(/taken over by process 1 on/);
    expect(thawed).toBe(true);
    expect(both).toBe(0);
    // Every output is B's, recorded once by B.
    const recs = readFileSync(join(out, 'manifest.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { output: string });
    expect(new Set(recs.map((r) => r.output)).size).toBe(24);
    expect(tempsIn(out)).toEqual([]);
  }, 120_000);
});

describe('a temporary file and the fence', () => {
  /** A fence whose `k`-th check (1: before the file is made, 2: the moment it exists) fails, after `then`. */
  const failingAt = (k: number, then: () => void = () => {}) => {
    let checks = 0;
    return {
      check() {
        if (++checks !== k) return;
        then();
        throw new Error(`fence lost at check ${k}`);
      },
    };
  };

  it('a fence that fails at any check while the file is made leaves no file: it is removed before the call returns', async () => {
    for (const k of [1, 2]) {
      const d = caseDir();
      await expect(AtomicFile.create(join(d, 'out.npy'), failingAt(k))).rejects.toThrow(`fence lost at check ${k}`);
      expect(readdirSync(d), `check ${k}`).toEqual([]);
    }
    // And with no failure, one temporary until it is published.
    const d = caseDir();
    const f = await AtomicFile.create(join(d, 'out.npy'), { check() {} });
    expect(readdirSync(d)).toHaveLength(1);
    await f.write([Buffer.from('abc')], 0);
    await f.flush(false);
    await f.publish();
    expect(readdirSync(d)).toEqual(['out.npy']);
    expect(readFileSync(join(d, 'out.npy'), 'utf8')).toBe('abc');
  });

  it('a temporary replaced by a hard link to a file outside as soon as it exists: that file is never written', async () => {
    const d = caseDir();
    const victim = join(caseDir(), 'victim');
    writeFileSync(victim, 'not yours');
    // The second check runs the moment the file exists: the swap happens there.
    const swap = () => {
      const [temp] = readdirSync(d);
      linkSync(victim, join(d, 'theirs'));
      renameSync(join(d, 'theirs'), join(d, temp!));
    };
    let checks = 0;
    const fence = { check: () => void (++checks === 2 && swap()) };
    // The writes go through the descriptor of the file made, whatever its name leads to now.
    const f = await AtomicFile.create(join(d, 'out.npy'), fence);
    await f.write([Buffer.from('abc')], 0);
    await f.abort();
    expect(readFileSync(victim, 'utf8')).toBe('not yours');
  });
});

describe('the fence reads what changed', () => {
  it('a lock overwritten in place with another nonce fails the next check, whether the check before read the file or trusted its change time', async () => {
    // 0 ms: the file's change time is too recent to be trusted, every check reads it; 300 ms:
    // the second check trusts it, so only the write's new change time can send it to read.
    for (const waitMs of [0, 300]) {
      const out = join(caseDir(), 'o');
      mkdirSync(out);
      const lock = await ShardLock.acquire(out, 0, 1, { waitS: 0, staleS: 60 });
      try {
        await new Promise((r) => setTimeout(r, waitMs));
        lock.check();
        lock.check();
        const path = join(out, 'rmsnorm.lock');
        const other = readFileSync(path, 'utf8').replace(/"nonce":"([0-9a-f]+)"/, (_m, n: string) => `"nonce":"${[...n].map((c) => (c === '0' ? '1' : '0')).join('')}"`);
        const fd = openSync(path, 'r+');
        writeSync(fd, other, 0);
        closeSync(fd);
        expect(() => lock.check(), `after ${waitMs} ms`).toThrow(/was taken over by/);
      } finally {
        await lock.release();
      }
    }
  });
});

describe('the supervisor and the work process', () => {
  it('the work process runs with one V8 background thread, unless the command was given --v8-pool-size', async () => {
    const d = caseDir();
    expect(spawnSync('mkfifo', [join(d, 'in.fifo')]).status).toBe(0);
    for (const [given, expected] of [[[], ['--v8-pool-size=1']], [['--v8-pool-size=3'], ['--v8-pool-size=3']]] as const) {
      // A read stalled on a FIFO keeps the work process alive while its command line is read.
      const a = startProcess(process.execPath, [...given, BIN, 'normalize', 'in.fifo', 'out.npy'], { cwd: d });
      const work = await childOf(a.p.pid!);
      // Until it has exec'd, the child is a copy of its parent: the channel's variable is in the work process's environment only.
      await until(() => readFileSync(`/proc/${work}/environ`, 'latin1').includes(`${CHANNEL_ENV}=`), 20_000);
      const args = readFileSync(`/proc/${work}/cmdline`, 'utf8').split('\0');
      a.p.kill('SIGTERM');
      await a.done;
      expect(args.filter((x) => x.startsWith('--v8-pool-size')), `given ${given.join(' ') || 'nothing'}`).toEqual(expected);
    }
  }, 30_000);

  it('the work process killed outright (as the out-of-memory killer does): its temporaries are removed, the lock released, 137 with a message', async () => {
    const d = caseDir();
    dataset(join(d, 'in'), 40, 4096);
    const out = join(d, 'out');
    const a = startCli(['normalize', 'in', '--out-dir', 'out', '--threads', '1'], { cwd: d });
    const work = await childOf(a.p.pid!);
    await until(() => tempsIn(out).length > 0, 20_000);
    process.kill(work, 'SIGKILL');
    const end = await a.done;
    expect(end.code, a.err).toBe(137);
    expect(a.err).toMatch(/the work process was killed by SIGKILL/);
    expect(readdirSync(out).filter((f) => f.includes('.tmp-') || f.endsWith('.lock'))).toEqual([]);
  }, 60_000);

  it('the supervisor killed outright: the work process commits nothing more and ends within the grace; the next run takes the shard at once', async () => {
    const d = caseDir();
    dataset(join(d, 'in'), 40, 4096);
    const out = join(d, 'out');
    const a = startCli(['normalize', 'in', '--out-dir', 'out', '--threads', '1'], { cwd: d });
    const work = await childOf(a.p.pid!);
    await until(() => tempsIn(out).length > 0, 20_000);
    const before = new Set(readdirSync(out).filter((f) => f.endsWith('.npy')));
    a.p.kill('SIGKILL');
    const t = Date.now();
    // Reparented, it is reaped by whatever adopts it: ended is what counts.
    await until(() => !running(work), 5_000);
    expect(Date.now() - t).toBeLessThan(500);
    const committed = readdirSync(out).filter((f) => f.endsWith('.npy') && !before.has(f));
    expect(committed.length, 'outputs renamed into place after the supervisor died').toBeLessThanOrEqual(1);
    expect(tempsIn(out)).toEqual([]);
    const b = startCli(['normalize', 'in', '--out-dir', 'out', '--threads', '1'], { cwd: d });
    expect((await b.done).code, b.err).toBe(0);
    expect(b.err).toMatch(/took over the lock of process \d+ .*its process is gone/);
  }, 60_000);

  it('killed by strace at the rename of the output: the supervisor removes the temporaries (137, nothing left)', () => {
    const d = caseDir();
    writeFileSync(join(d, 'x.npy'), npy(64, 64));
    const r = spawnSync('strace', ['-f', '-qq', '-o', '/dev/null', '-e', 'trace=rename,renameat,renameat2', '-e', 'inject=rename,renameat,renameat2:signal=KILL:when=1', '--', process.execPath, BIN, 'normalize', 'x.npy', 'y.npy'], { cwd: d, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(137);
    expect(readdirSync(d).sort()).toEqual(['x.npy']);
  });
});

describe('nothing written through a link, nothing outside the folders', () => {
  it('a hard-linked manifest is refused; the file it is linked to is unchanged', () => {
    const d = caseDir();
    dataset(join(d, 'in'), 2, 16);
    mkdirSync(join(d, 'outside'));
    mkdirSync(join(d, 'out'));
    writeFileSync(join(d, 'outside/victim'), 'line one\nan unterminated line');
    linkSync(join(d, 'outside/victim'), join(d, 'out/manifest.jsonl'));
    const before = treeHash(join(d, 'outside'));
    const r = spawnSync(process.execPath, [BIN, 'normalize', 'in', '--out-dir', 'out'], { cwd: d, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/manifest\.jsonl has 2 hard links: refused/);
    expect(treeHash(join(d, 'outside'))).toBe(before);
    expect(readFileSync(join(d, 'outside/victim'), 'utf8')).toBe('line one\nan unterminated line');
  });

  it('a hard link planted as the lock is never written: taken as a lock that does not parse, set aside, the file it is linked to unchanged', () => {
    const d = caseDir();
    dataset(join(d, 'in'), 2, 16);
    mkdirSync(join(d, 'outside'));
    mkdirSync(join(d, 'out'));
    writeFileSync(join(d, 'outside/victim'), 'precious');
    linkSync(join(d, 'outside/victim'), join(d, 'out/rmsnorm.lock'));
    const before = treeHash(join(d, 'outside'));
    const r = spawnSync(process.execPath, [BIN, 'normalize', 'in', '--out-dir', 'out', '--lock-stale', '0.5'], { cwd: d, encoding: 'utf8', timeout: 30_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/took over the lock of an earlier run/);
    // The victim's content is kept; only the name in out/ it shared is gone (its link count drops).
    expect(readFileSync(join(d, 'outside/victim'), 'utf8')).toBe('precious');
    expect(before).not.toBe('');
  });
});
