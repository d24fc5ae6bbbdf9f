/**
 * The batch tool's promises where clusters push them, tested with real processes: a resume
 * never trusts a stale record (mixed shard counts, a weight replaced in place, stale part files,
 * a cut manifest line); two runs on one shard never touch each other's files (the lock: a
 * second run waits, `--lock-wait 0` exits 75 naming the owner, a dead owner's lock is taken
 * over, a remote one once its heartbeat stops); SIGTERM and SIGHUP stop a run as Ctrl-C does;
 * a killed run's temporary is removed by the next run on that output; without shared memory
 * the dataset and stream paths give the same bytes.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statfsSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { normalizeDataset, normalizeFile, npyHeader, type DatasetRecord } from '../dist/node/index.js';

const BIN = new URL('../bundle/node/bin.js', import.meta.url).pathname;
const root = mkdtempSync(join(tmpdir(), 'rmsnorm-safety-'));
const DATA = join(root, 'data');
const REF = join(root, 'ref');
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** 24 files of 2048 × 256 float32 (2 MiB each): enough work that a second run meets the first. */
const NAMES = Array.from({ length: 24 }, (_, i) => `f${String(i).padStart(2, '0')}.npy`);
const ROWS = 2048;
const DIM = 256;

beforeAll(async () => {
  mkdirSync(DATA);
  mkdirSync(REF);
  NAMES.forEach((n, i) => {
    const x = new Float32Array(ROWS * DIM).map((_, k) => Math.sin(k * 0.013 + i) * (1 + (k % 7)));
    writeFileSync(join(DATA, n), Buffer.concat([npyHeader([ROWS, DIM]), Buffer.from(x.buffer)]));
  });
  for (const n of NAMES) await normalizeFile(join(DATA, n), join(REF, n), { threads: 1 });
}, 120_000);

function cli(...args: string[]) {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A command running in the background, with what it prints. */
interface Run {
  p: ChildProcess;
  out: string;
  err: string;
  done: Promise<number | null>;
}
function start(args: string[], nodeArgs: string[] = []): Run {
  const p = spawn(process.execPath, [...nodeArgs, BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const r: Run = { p, out: '', err: '', done: new Promise((ok) => p.on('exit', (code) => ok(code))) };
  p.stdout!.on('data', (d: Buffer) => (r.out += d));
  p.stderr!.on('data', (d: Buffer) => (r.err += d));
  return r;
}

/** Waits until `pred` holds (polling every 5 ms), or fails after `ms`. */
async function until(pred: () => boolean, ms = 30_000): Promise<void> {
  const t0 = Date.now();
  while (!pred()) {
    if (Date.now() - t0 > ms) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Every manifest line of `dir`. */
const records = (dir: string): DatasetRecord[] =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl'))
    .flatMap((f) => readFileSync(join(dir, f), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as DatasetRecord));

/** Every output of `dir` equal to the reference, and nothing else there but manifests (no temporary, no lock). */
function expectReference(dir: string, ref = REF): void {
  const names = readdirSync(dir).sort();
  expect(names.filter((n) => n.endsWith('.npy'))).toEqual(NAMES);
  expect(names.filter((n) => !n.endsWith('.npy') && !n.endsWith('.jsonl')), 'no temporary or lock left').toEqual([]);
  for (const n of NAMES) expect(readFileSync(join(dir, n)).equals(readFileSync(join(ref, n))), n).toBe(true);
}

describe('resume cannot trust a stale record', () => {
  it('mixed shard counts: shards of 2, all again with eps 0.5, shards of 2 again: the last run redoes everything (no stale shard line wins)', () => {
    const out = join(root, 'mixed');
    for (const s of ['0/2', '1/2']) expect(cli('normalize', DATA, '--out-dir', out, '--shard', s).code).toBe(0);
    expect(cli('normalize', DATA, '--out-dir', out, '--eps', '0.5').code).toBe(0);
    for (const n of NAMES) expect(readFileSync(join(out, n)).equals(readFileSync(join(REF, n))), 'eps 0.5 differs').toBe(false);
    for (const s of ['0/2', '1/2']) {
      const r = cli('normalize', DATA, '--out-dir', out, '--shard', s, '--json');
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout).written, s).toBe(12);
    }
    expectReference(out);
    // And now everything is done, whoever asks.
    expect(cli('normalize', DATA, '--out-dir', out, '--eps', '1e-6').stdout).toMatch(/^nothing to do: 24 of 24 files already done/);
  }, 120_000);

  it('a weight replaced in place (same size, same time): the next run redoes everything with the new one, recorded by its hash', async () => {
    const out = join(root, 'weight');
    const w = join(root, 'w.npy');
    const wa = new Float32Array(DIM).fill(1.5);
    const wb = new Float32Array(DIM).fill(0.5);
    writeFileSync(w, Buffer.concat([npyHeader([DIM]), Buffer.from(wa.buffer)]));
    const t = statSync(w).mtime;
    expect(cli('normalize', DATA, '--out-dir', out, '--weight', w).code).toBe(0);
    writeFileSync(w, Buffer.concat([npyHeader([DIM]), Buffer.from(wb.buffer)]));
    utimesSync(w, t, t);
    const r = cli('normalize', DATA, '--out-dir', out, '--weight', w, '--json');
    expect(JSON.parse(r.stdout).written).toBe(24);
    const ref = join(root, 'weight-ref.npy');
    await normalizeFile(join(DATA, NAMES[3]!), ref, { weight: wb });
    expect(readFileSync(join(out, NAMES[3]!)).equals(readFileSync(ref))).toBe(true);
    const rec = records(out).filter((x) => x.output === NAMES[3]).pop()!;
    const sha = createHash('sha256').update('float32').update(Buffer.from(wb.buffer)).digest('hex');
    expect(rec.options.weight).toEqual({ sha256: sha, dtype: 'float32' });
  }, 120_000);

  it('a line cut at the end of a manifest (a killed run) is removed before the next line is appended', () => {
    const out = join(root, 'cut');
    expect(cli('normalize', DATA, '--out-dir', out).code).toBe(0);
    const m = join(out, 'manifest.jsonl');
    const lines = readFileSync(m, 'utf8').split('\n').filter(Boolean);
    // The last line cut in the middle, as a kill during its write leaves it; its output gone too.
    writeFileSync(m, lines.slice(0, -1).join('\n') + '\n' + lines[lines.length - 1]!.slice(0, 40));
    const last = (JSON.parse(lines[lines.length - 1]!) as DatasetRecord).output;
    rmSync(join(out, last));
    const r = cli('normalize', DATA, '--out-dir', out, '--json');
    expect(JSON.parse(r.stdout)).toMatchObject({ written: 1, skipped: 23 });
    const after = readFileSync(m, 'utf8');
    expect(after.endsWith('\n')).toBe(true);
    for (const l of after.split('\n').filter(Boolean)) expect(() => JSON.parse(l), l).not.toThrow();
    expectReference(out);
  }, 60_000);

  it('a manifest line that does not fit on a full disk: the message says so and counts true, no cut line is left, the next run redoes that file', (ctx) => {
    const mnt = join(root, 'full');
    mkdirSync(mnt);
    if (spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mnt]).status !== 0) ctx.skip(); // needs root
    try {
      const small = join(root, 'small.npy');
      const x = new Float32Array(10 * 256).map((_, k) => Math.sin(k));
      writeFileSync(small, Buffer.concat([npyHeader([10, 256]), Buffer.from(x.buffer)]));
      // Room for exactly the lock (one page) and the output (three): none for the manifest's first line.
      const free = statfsSync(mnt).bavail;
      writeFileSync(join(mnt, 'filler'), Buffer.alloc((free - 4) * 4096));
      const out = join(mnt, 'out');
      const r = cli('normalize', small, '--out-dir', out);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/small\.npy was written, but its line could not be added to .*manifest\.jsonl \(no space left on the device \(ENOSPC\)\); the next run redoes it \(no other file written\)/);
      expect(readFileSync(join(out, 'manifest.jsonl'), 'utf8')).toBe('');
      rmSync(join(mnt, 'filler'));
      const again = cli('normalize', small, '--out-dir', out, '--json');
      expect(JSON.parse(again.stdout)).toMatchObject({ written: 1, skipped: 0 });
      expect(readFileSync(join(out, 'manifest.jsonl'), 'utf8').split('\n').filter(Boolean)).toHaveLength(1);
    } finally {
      spawnSync('umount', [mnt]);
    }
  });

  it('stale parts: a file split for 2 shards, then for 3, then not at all: only the current plan\'s outputs remain', async () => {
    const dir = join(root, 'parts');
    const inDir = join(dir, 'in');
    mkdirSync(inDir, { recursive: true });
    const x = new Float32Array(900 * 64).map((_, k) => Math.cos(k * 0.3));
    writeFileSync(join(inDir, 'big.npy'), Buffer.concat([npyHeader([900, 64]), Buffer.from(x.buffer)]));
    writeFileSync(join(inDir, 'small.npy'), Buffer.concat([npyHeader([3, 64]), Buffer.from(x.subarray(0, 192).buffer.slice(0, 768))]));
    const out = join(dir, 'out');
    const parts = () => readdirSync(out).filter((n) => n.startsWith('big.')).sort();
    const run = (count: number) => Promise.all(Array.from({ length: count }, (_, index) => normalizeDataset(inDir, out, { threads: 1, shard: { index, count }, splitBytes: 0 })));
    await run(2);
    expect(parts()).toEqual(['big.part-0-of-2.npy', 'big.part-1-of-2.npy']);
    const three = await run(3);
    expect(parts()).toEqual(['big.part-0-of-3.npy', 'big.part-1-of-3.npy', 'big.part-2-of-3.npy']);
    expect(three.flatMap((s) => s.warnings).filter((w) => /removed big\.part-\d-of-2\.npy/.test(w))).toHaveLength(2);
    // The documented recipe, glob('big.part-*') in order, is the single-process output.
    const ref = join(dir, 'ref.npy');
    await normalizeFile(join(inDir, 'big.npy'), ref);
    const data = (b: Buffer) => b.subarray(128);
    expect(Buffer.concat(parts().map((p) => data(readFileSync(join(out, p))))).equals(data(readFileSync(ref)))).toBe(true);
    await run(1);
    expect(parts()).toEqual(['big.npy']);
    expect(readFileSync(join(out, 'big.npy')).equals(readFileSync(ref))).toBe(true);
  }, 60_000);
});

describe('two runs on one output directory', () => {
  for (const shard of [null, '1/2']) {
    it(`${shard ? `the same --shard ${shard} twice` : 'unsharded twice'} at once: the second waits for the first, neither touches the other's files`, async () => {
      const out = join(root, `twice-${shard ? 'shard' : 'all'}`);
      const args = ['normalize', DATA, '--out-dir', out, '--threads', '1', ...(shard ? ['--shard', shard] : [])];
      const lock = join(out, shard ? 'rmsnorm.shard-1-of-2.lock' : 'rmsnorm.lock');
      const a = start(args);
      await until(() => existsSync(lock));
      a.p.kill('SIGSTOP'); // hold it mid-run while the second starts
      const b = start(args);
      await until(() => b.err.includes('waiting for'));
      expect(b.err).toMatch(new RegExp(`^rmsnorm-wasm: warning: waiting for process ${a.p.pid} on ${hostname()} \\(.*since .*\\), which is writing `));
      a.p.kill('SIGCONT');
      expect(await a.done).toBe(0);
      expect(await b.done).toBe(0);
      expect(a.err).toBe('');
      if (!shard) {
        expectReference(out);
        expect(b.out).toMatch(/^nothing to do: 24 of 24 files already done/);
      } else {
        expect(readdirSync(out).filter((n) => n.startsWith('.') || n.endsWith('.lock'))).toEqual([]);
      }
    }, 120_000);
  }

  it('--lock-wait 0 exits 75 naming the owner; another shard count is refused while it runs; a SIGKILLed owner is taken over at once', async () => {
    const out = join(root, 'busy');
    const a = start(['normalize', DATA, '--out-dir', out, '--threads', '1', '--shard', '0/2']);
    await until(() => existsSync(join(out, 'rmsnorm.shard-0-of-2.lock')));
    a.p.kill('SIGSTOP');
    let r = cli('normalize', DATA, '--out-dir', out, '--shard', '0/2', '--lock-wait', '0');
    expect(r.code).toBe(75);
    expect(r.stderr).toMatch(new RegExp(`^rmsnorm-wasm: error: shard 0/2 of .*busy is being written by process ${a.p.pid} on ${hostname()} \\(shard 0/2, since .*\\); try again when it ends\\n$`));
    r = cli('normalize', DATA, '--out-dir', out);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/is being written by process \d+ .*: runs with different shard counts share outputs, so they must not run at once/);
    // The other shard of the same count runs beside it.
    expect(cli('normalize', DATA, '--out-dir', out, '--shard', '1/2').code).toBe(0);
    a.p.kill('SIGKILL');
    await a.done;
    const t0 = Date.now();
    r = cli('normalize', DATA, '--out-dir', out, '--shard', '0/2', '--lock-wait', '0');
    expect(r.code, r.stderr).toBe(0);
    expect(Date.now() - t0).toBeLessThan(20_000);
    expectReference(out);
  }, 120_000);

  it('a lock from another machine whose heartbeat stopped is taken over after --lock-stale seconds', () => {
    const out = join(root, 'remote');
    mkdirSync(out);
    const owner = { pid: 1, host: 'elsewhere', machine: 'another-boot/pid:[1]', started: 1, nonce: 'feedbeef', shard: '0/1', since: '2026-01-01T00:00:00.000Z', beat: 7 };
    writeFileSync(join(out, 'rmsnorm.lock'), JSON.stringify(owner).padEnd(1023, ' ') + '\n');
    const t0 = Date.now();
    const r = cli('normalize', DATA, '--out-dir', out, '--lock-stale', '1');
    expect(r.code, r.stderr).toBe(0);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1000);
    expect(r.stderr).toMatch(/waiting for process 1 on elsewhere \(since 2026-01-01T00:00:00\.000Z\)/);
    expectReference(out);
  }, 60_000);
});

describe('signals and killed runs', () => {
  const big = join(root, 'sparse.f32');
  beforeAll(() => {
    writeFileSync(big, '');
    spawnSync('truncate', ['-s', String(2 ** 31), big]); // 2 GiB of zeros, sparse: long enough to stop
  });

  it.each([
    ['SIGTERM', 143],
    ['SIGHUP', 129],
  ] as const)('%s stops a one-file run like Ctrl-C: exit %i, the temporary removed, no output', async (sig, code) => {
    const work = join(root, `sig-${sig}`);
    mkdirSync(work);
    const r = start(['normalize', big, join(work, 'out.f32'), '--format', 'raw', '--dim', '4096']);
    await until(() => readdirSync(work).length > 0);
    r.p.kill(sig);
    expect(await r.done).toBe(code);
    expect(r.err).toMatch(new RegExp(`stopped by ${sig}; no output was written`));
    expect(readdirSync(work)).toEqual([]);
  }, 60_000);

  it('SIGTERM stops a dataset run: what was completed is recorded, a rerun finishes it', async () => {
    const out = join(root, 'term-set');
    const r = start(['normalize', DATA, '--out-dir', out, '--threads', '1', '--verbose']);
    await until(() => /^written /m.test(r.err));
    r.p.kill('SIGTERM');
    expect(await r.done).toBe(143);
    expect(r.err).toMatch(/stopped by SIGTERM; the outputs completed so far are kept and recorded/);
    expect(readdirSync(out).filter((n) => n.startsWith('.') || n.endsWith('.lock'))).toEqual([]);
    expect(cli('normalize', DATA, '--out-dir', out).code).toBe(0);
    expectReference(out);
  }, 60_000);

  it('a one-file run killed with SIGKILL, both its processes at once, leaves its temporary; the next run on that output removes it', async () => {
    const work = join(root, 'killed');
    mkdirSync(work);
    // Its own process group, killed whole (as a cgroup's out-of-memory kill or a node's loss
    // would): killing the first process alone leaves the work process to remove its temporary.
    const p = spawn(process.execPath, [BIN, 'normalize', big, join(work, 'out.f32'), '--format', 'raw', '--dim', '4096'], { stdio: 'ignore', detached: true });
    const ended = new Promise((ok) => p.on('exit', ok));
    await until(() => readdirSync(work).length > 0);
    process.kill(-p.pid!, 'SIGKILL');
    await ended;
    const [temp] = readdirSync(work);
    expect(temp).toMatch(/^\.out\.f32\.tmp-\d+-[0-9a-f]{8}$/);
    // The work process (whose pid the name holds) may take a moment more to be gone.
    await until(() => !existsSync(`/proc/${/tmp-(\d+)-/.exec(temp!)![1]}`));
    const small = join(root, 'small.f32');
    writeFileSync(small, Buffer.alloc(4096 * 4));
    expect(cli('normalize', small, join(work, 'out.f32'), '--format', 'raw', '--dim', '4096').code).toBe(0);
    expect(readdirSync(work)).toEqual(['out.f32']);
  }, 60_000);
});

describe('without shared memory (the pool on one thread)', () => {
  const NO_SAB = ['--no-harmony-sharedarraybuffer'];

  it('a dataset run gives the same bytes', async () => {
    const out = join(root, 'no-sab');
    const r = start(['normalize', DATA, '--out-dir', out, '--json'], NO_SAB);
    expect(await r.done, r.err).toBe(0);
    expect(JSON.parse(r.out)).toMatchObject({ written: 24, threads: 0 });
    expectReference(out);
  }, 120_000);

  it('createNormalizeStream gives the same bytes', () => {
    const n = NAMES[2]!;
    const raw = join(root, 'stream-in.f32');
    writeFileSync(raw, readFileSync(join(DATA, n)).subarray(128));
    const out = join(root, 'stream-out.f32');
    const script = `
      import { createReadStream, createWriteStream } from 'node:fs';
      import { pipeline } from 'node:stream/promises';
      import { createNormalizeStream } from ${JSON.stringify(new URL('../dist/node/index.js', import.meta.url).href)};
      if (typeof SharedArrayBuffer !== 'undefined') throw new Error('shared memory is there');
      await pipeline(createReadStream(${JSON.stringify(raw)}, { highWaterMark: 1000 }), createNormalizeStream({ dim: ${DIM} }), createWriteStream(${JSON.stringify(out)}));`;
    const r = spawnSync(process.execPath, [...NO_SAB, '--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(readFileSync(out).equals(readFileSync(join(REF, n)).subarray(128))).toBe(true);
  });

  it('a stream from a pipe, and a file, give the same bytes', () => {
    const n = NAMES[5]!;
    const sh = (cmd: string) => spawnSync('sh', ['-c', cmd], { encoding: 'utf8' });
    const out = join(root, 'no-sab-pipe.npy');
    let r = sh(`cat "${join(DATA, n)}" | "${process.execPath}" ${NO_SAB[0]} "${BIN}" normalize - "${out}"`);
    expect(r.status, r.stderr).toBe(0);
    expect(readFileSync(out).equals(readFileSync(join(REF, n)))).toBe(true);
    r = sh(`"${process.execPath}" ${NO_SAB[0]} "${BIN}" normalize "${join(DATA, n)}" "${out}"`);
    expect(r.status, r.stderr).toBe(0);
    expect(readFileSync(out).equals(readFileSync(join(REF, n)))).toBe(true);
  }, 60_000);
});
