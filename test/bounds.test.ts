/**
 * Every value a user or a file hands the batch tool is bounded before use, and no error is
 * swallowed: shard counts, glob patterns (matched without backtracking, the walk stoppable),
 * the fields of a lock and of manifest records (a bad record is a skipped record, named once,
 * a line read with a cap), errors while walking the inputs (named with their path); and the
 * logs a machine reads (progress counting the files in flight, `--progress tty` without a
 * terminal, `--help` quoting real lines, nothing made for a run refused).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, closeSync, existsSync, ftruncateSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { normalizeDataset, npyHeader } from '../dist/node/index.js';
import { shardOf } from '../dist/node/dataset/shards.js';
import { compileGlob, complete, startOf, step } from '../dist/node/dataset/glob.js';
import { BIN, foreignLock, npy } from './processes.js';

const root = mkdtempSync(join(tmpdir(), 'rmsnorm-bounds-'));
chmodSync(root, 0o755);
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const caseDir = (): string => {
  const d = join(root, `c${n++}`);
  mkdirSync(d);
  chmodSync(d, 0o755);
  return d;
};

/** A module loaded before the command that prints its peak RSS (kB) as it exits. */
const RSS_PROBE = join(root, 'rss-probe.mjs');
writeFileSync(RSS_PROBE, "import { writeSync } from 'node:fs';\nprocess.on('exit', () => writeSync(2, `maxrss=${process.resourceUsage().maxRSS}\\n`));\n");

/** Runs the command to its end (as `user`, when given), timed. */
function cli(args: string[], o: { cwd?: string; user?: number; timeoutMs?: number; rss?: boolean } = {}) {
  const node = [...(o.rss ? ['--import', RSS_PROBE] : []), BIN, ...args];
  const [cmd, argv] = o.user === undefined ? [process.execPath, node] : ['setpriv', [`--reuid=${o.user}`, `--regid=${o.user}`, '--clear-groups', process.execPath, ...node]];
  const t0 = Date.now();
  const r = spawnSync(cmd, argv, { cwd: o.cwd, encoding: 'utf8', timeout: o.timeoutMs ?? 60_000, killSignal: 'SIGKILL' });
  const rss = Math.max(0, ...[...r.stderr.matchAll(/maxrss=(\d+)/g)].map((m) => Number(m[1]) / 1024));
  return { code: r.status, signal: r.signal, stderr: r.stderr, stdout: r.stdout, ms: Date.now() - t0, rssMb: rss };
}

const NOBODY = 65534;
const asRoot = process.getuid?.() === 0;

describe('shard counts', () => {
  it('--shard 0/1000000 runs in moments and little memory; past that limit it is a usage error, not an abort', () => {
    const d = caseDir();
    mkdirSync(join(d, 'in'));
    for (let i = 0; i < 3; i++) writeFileSync(join(d, `in/f${i}.npy`), npy(2, 8, i));
    const r = cli(['normalize', 'in', '--out-dir', 'o', '--shard', '0/1000000', '--json'], { cwd: d, rss: true });
    expect(r.code, r.stderr).toBe(0);
    expect(r.ms).toBeLessThan(10_000);
    expect(r.rssMb).toBeLessThan(300);
    expect(JSON.parse(r.stdout).written).toBe(1);
    const last = cli(['normalize', 'in', '--out-dir', 'o', '--shard', '999999/1000000'], { cwd: d });
    expect(last.code, last.stderr).toBe(0);
    expect(last.stdout).toMatch(/nothing to do: 0 of 0 files/);
    for (const s of ['0/100000000', '0/2147483648', '0/4294967296', '0/1000001', '1/1', '0/0', `0/${'9'.repeat(400)}`]) {
      const bad = cli(['normalize', 'in', '--out-dir', `o-${s.length}`, '--shard', s], { cwd: d });
      expect(bad.code, `${s}: ${bad.stderr}`).toBe(2);
      expect(bad.stderr).toMatch(/--shard must be I\/N with 0 <= I < N <= 1000000/);
      expect(bad.stderr.length).toBeLessThan(300);
      expect(existsSync(join(d, `o-${s.length}`))).toBe(false);
    }
  });

  it('the API: a shard count past the limit is a RangeError, a shard that is not an object a TypeError, before anything is made', async () => {
    const d = caseDir();
    writeFileSync(join(d, 'a.npy'), npy(2, 8));
    await expect(normalizeDataset(join(d, 'a.npy'), join(d, 'o'), { shard: { index: 0, count: 2 ** 31 } })).rejects.toThrow(RangeError);
    await expect(normalizeDataset(join(d, 'a.npy'), join(d, 'o'), { shard: 'x' as never })).rejects.toThrow(TypeError);
    expect(existsSync(join(d, 'o'))).toBe(false);
  });

  it('shardOf with more shards than files, zero-byte files among them: as the plain rule, and in time linear in the files, not the count', () => {
    const file = (rel: string, bytes: number) => ({ input: rel, rel, size: bytes, bytes, mtimeMs: 0 });
    const plain = (files: ReturnType<typeof file>[], count: number, index: number): string[] => {
      const load = new Map<number, number>();
      const got: string[] = [];
      for (const f of [...files].sort((a, b) => b.bytes - a.bytes || (a.rel < b.rel ? -1 : 1))) {
        let s = 0;
        for (let k = 1; k < Math.min(count, files.length + 1); k++) if ((load.get(k) ?? 0) < (load.get(s) ?? 0)) s = k;
        load.set(s, (load.get(s) ?? 0) + f.bytes);
        if (s === index) got.push(f.rel);
      }
      return got.sort();
    };
    fc.assert(
      fc.property(fc.array(fc.nat({ max: 5 }), { minLength: 1, maxLength: 40 }), fc.integer({ min: 2, max: 60 }), (sizes, count) => {
        const files = sizes.map((b, i) => file(`f${String(i).padStart(3, '0')}`, b));
        for (let index = 0; index < Math.min(count, 45); index++) expect(shardOf(files, index, count).map((f) => f.rel)).toEqual(plain(files, count, index));
      }),
      { numRuns: 120, seed: 11 },
    );
    const many = Array.from({ length: 20_000 }, (_, i) => file(`g${i}`, 1 + (i % 97)));
    const t = performance.now();
    expect(shardOf(many, 999_999, 1_000_000)).toEqual([]);
    expect(shardOf(many, 7, 1_000_000)).toHaveLength(1);
    expect(performance.now() - t).toBeLessThan(2000);
  });
});

describe('glob patterns', () => {
  /** The tree `in/d0/d1/…/d39/x.npy`, 40 deep. */
  const deep = (d: string): void => {
    let p = join(d, 'in');
    for (let i = 0; i < 40; i++) p = join(p, `d${i}`);
    mkdirSync(p, { recursive: true });
    writeFileSync(join(p, 'x.npy'), npy(2, 8));
  };

  it('twelve ** over a 40-deep tree: answered in moments (no backtracking), a match found, none reported as such', () => {
    const d = caseDir();
    deep(d);
    const stars = Array.from({ length: 12 }, () => '**').join('/');
    const none = cli(['normalize', `in/${stars}/*.npz`, '--out-dir', 'o'], { cwd: d });
    expect(none.code, none.stderr).toBe(1);
    expect(none.stderr).toMatch(/no file matches/);
    expect(none.ms).toBeLessThan(5000);
    expect(existsSync(join(d, 'o'))).toBe(false);
    const one = cli(['normalize', `in/${stars}/*.npy`, '--out-dir', 'o', '--json'], { cwd: d });
    expect(one.code, one.stderr).toBe(0);
    expect(JSON.parse(one.stdout).written).toBe(1);
    expect(one.ms).toBeLessThan(5000);
  });

  it('a class that runs backwards is a usage error naming it; so is a pattern past 4096 characters', () => {
    const d = caseDir();
    mkdirSync(join(d, 'in'));
    const r = cli(['normalize', 'in/[z-a].npy', '--out-dir', 'o'], { cwd: d });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/^rmsnorm-wasm: the pattern "in\/\[z-a\]\.npy" has the range z-a, which runs backwards/);
    expect(r.stderr).not.toMatch(/Invalid regular expression/);
    const long = cli(['normalize', `in/${'*a'.repeat(2100)}`, '--out-dir', 'o'], { cwd: d });
    expect(long.code, long.stderr).toBe(2);
    expect(long.stderr).toMatch(/^rmsnorm-wasm: a pattern of 4203 characters, more than the 4096 taken/);
    expect(existsSync(join(d, 'o'))).toBe(false);
  });

  it('the matcher agrees with a regular expression of the same pattern on 400 random patterns and paths', () => {
    const toRe = (p: string) =>
      new RegExp(
        `^${p
          .split('/')
          .map((seg) => (seg === '**' ? '(?:[^/]+/)*' : `${seg.replace(/[.+^${}()|\\]/g, '\\$&').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]').replace(/\[!/g, '[^')}/`))
          .join('')
          .replace(/\/$/, '')
          .replace(/\(\?:\[\^\/\]\+\/\)\*$/, '(?:[^/]+/)*[^/]+')}$`,
      );
    const seg = fc.oneof(fc.constant('**'), fc.stringMatching(/^[ab*?]{1,4}$/), fc.constantFrom('[ab]', '[!a]', 'a[a-c]', '*b*'));
    const name = fc.stringMatching(/^[abc]{1,4}$/);
    fc.assert(
      fc.property(fc.array(seg, { minLength: 1, maxLength: 5 }), fc.array(name, { minLength: 1, maxLength: 6 }), (segs, names) => {
        const pattern = segs.join('/').replace(/(\*\*\/)+\*\*/g, '**');
        const g = compileGlob(pattern, 'p');
        // The leading names without a glob character are the directory walked: the path must start with them.
        const fixed = g.base === '.' ? [] : g.base.split('/');
        let places = startOf(g);
        for (const nm of names.slice(fixed.length)) places = step(g, places, nm);
        const ours = names.length > fixed.length && fixed.every((f, i) => names[i] === f) && complete(g, places);
        expect(ours, `${pattern} on ${names.join('/')}`).toBe(toRe(pattern).test(names.join('/')));
      }),
      { numRuns: 400, seed: 5 },
    );
  });

  it('a walk is stopped by the signal between directories: a big tree, aborted, rejects at once with nothing made', async () => {
    const d = caseDir();
    for (let i = 0; i < 300; i++) mkdirSync(join(d, `in/a${i}/b/c`), { recursive: true });
    const ac = new AbortController();
    const p = normalizeDataset(join(d, 'in/**/*.npy'), join(d, 'o'), { signal: ac.signal });
    await new Promise((ok) => setTimeout(ok, 5));
    const t = performance.now();
    ac.abort(new Error('enough'));
    await expect(p).rejects.toThrow('enough');
    expect(performance.now() - t).toBeLessThan(200);
    expect(existsSync(join(d, 'o'))).toBe(false);
  });

  it.skipIf(!asRoot)('a folder that cannot be read, under a glob or a walked folder: exit 1 naming it (EACCES), never "no file matches"', () => {
    const d = caseDir();
    mkdirSync(join(d, 'in/shut'), { recursive: true });
    mkdirSync(join(d, 'in/open'), { recursive: true });
    chmodSync(join(d, 'in'), 0o755);
    chmodSync(join(d, 'in/open'), 0o755);
    writeFileSync(join(d, 'in/open/a.npy'), npy(2, 8));
    writeFileSync(join(d, 'in/shut/b.npy'), npy(2, 8));
    chmodSync(join(d, 'in/shut'), 0o000);
    for (const input of ['in/shut/*.npy', 'in/**/*.npy', 'in']) {
      const r = cli(['normalize', input, '--out-dir', join(d, `o${input.length}`)], { cwd: d, user: NOBODY });
      expect(r.code, `${input}: ${r.stderr}`).toBe(1);
      expect(r.stderr).toMatch(/cannot read the directory in\/shut: permission denied \(EACCES\)/);
      expect(r.stderr).not.toMatch(/no file matches/);
    }
  });
});

describe('a lock and a manifest are read as what they may be', () => {
  it('a manifest record with options null or missing, or fields of the wrong type: skipped, named once, its output redone', () => {
    const d = caseDir();
    mkdirSync(join(d, 'in'));
    for (let i = 0; i < 3; i++) writeFileSync(join(d, `in/f${i}.npy`), npy(4, 8, i));
    expect(cli(['normalize', 'in', '--out-dir', 'o'], { cwd: d }).code).toBe(0);
    const lines = readFileSync(join(d, 'o/manifest.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    lines[0]!.options = null;
    delete lines[1]!.options;
    lines[2]!.rows = '4';
    writeFileSync(join(d, 'o/manifest.jsonl'), lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
    const r = cli(['normalize', 'in', '--out-dir', 'o', '--json'], { cwd: d });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr.match(/skipped 3 lines of .*manifest\.jsonl that are not records \(line 1: options is not what a record holds; line 2: options is missing; line 3: rows is not what a record holds\)/g)).toHaveLength(1);
    expect(JSON.parse(r.stdout).written).toBe(3);
    // The lines now recorded are good: the next run skips everything (and names the old lines again).
    const again = cli(['normalize', 'in', '--out-dir', 'o', '--json'], { cwd: d });
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout).skipped).toBe(3);
    expect(again.stderr.match(/skipped 3 lines/g)).toHaveLength(1);
  });

  it('a 600 MiB line (no newline) is skipped at its cap, read as a stream: done in moments and little memory', () => {
    const d = caseDir();
    mkdirSync(join(d, 'in'));
    writeFileSync(join(d, 'in/a.npy'), npy(4, 8));
    mkdirSync(join(d, 'o'));
    const fd = openSync(join(d, 'o/manifest.jsonl'), 'w');
    writeSync(fd, '{"output":"');
    ftruncateSync(fd, 600 << 20); // a hole: 600 MiB of zero bytes, one line
    closeSync(fd);
    const r = cli(['normalize', 'in', '--out-dir', 'o'], { cwd: d, rss: true, timeoutMs: 60_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/line 1: longer than 1048576 bytes/);
    expect(r.ms).toBeLessThan(20_000);
    expect(r.rssMb).toBeLessThan(400);
  });

  it('of many bad lines, five are named and the rest counted', () => {
    const d = caseDir();
    mkdirSync(join(d, 'in'));
    writeFileSync(join(d, 'in/a.npy'), npy(4, 8));
    mkdirSync(join(d, 'o'));
    writeFileSync(join(d, 'o/manifest.jsonl'), Array.from({ length: 40 }, (_, i) => (i % 2 ? '[1,2]' : '{"output": 3}')).join('\n') + '\n');
    const r = cli(['normalize', 'in', '--out-dir', 'o'], { cwd: d });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/skipped 40 lines .*line 1: input is missing; line 2: not a JSON object; .*; and 35 more\)/);
  });

  it('a lock whose heartbeat is in the future, or whose fields are not a lock\'s, is judged as one that does not parse: taken over once it stays still', () => {
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'latin1').trim();
    for (const owner of [
      { boot, machine: `${boot}/pid:[1]`, beatAt: Date.now() + 10 * 365 * 86400e3 },
      { pid: 'x' },
      { host: 'evil\u001b[2Jhost' },
      { nonce: '../../etc' },
      { shard: '0/1/2' },
    ]) {
      const d = caseDir();
      mkdirSync(join(d, 'in'));
      writeFileSync(join(d, 'in/a.npy'), npy(4, 8));
      mkdirSync(join(d, 'o'));
      writeFileSync(join(d, 'o/rmsnorm.lock'), foreignLock(owner));
      const r = cli(['normalize', 'in', '--out-dir', 'o', '--lock-stale', '0.5'], { cwd: d, timeoutMs: 20_000 });
      expect(r.code, `${JSON.stringify(owner)}: ${r.stderr}`).toBe(0);
      expect(r.stderr).toMatch(/took over the lock of an earlier run, presumed dead: its lock did not parse/);
      expect(r.stderr).not.toMatch(/\u001b/);
    }
  });
});

describe('logs a machine reads', () => {
  it('progress counts the bytes and rows of the files in flight: a line before any file is done shows them', () => {
    const d = caseDir();
    mkdirSync(join(d, 'in'));
    writeFileSync(join(d, 'in/big.npy'), npy(32768, 1024)); // 128 MiB, one file
    const r = cli(['normalize', 'in', '--out-dir', 'o', '--progress-interval', '0.001', '--threads', '1'], { cwd: d });
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stderr.split('\n').filter((l) => l.startsWith('rmsnorm-wasm: progress'));
    const mid = lines.find((l) => /: 0\/1 files, [1-9][\d.]*\/134 MB, [1-9][\d,]* rows, /.test(l));
    expect(mid, lines.join('\n')).toBeDefined();
  });

  it('--progress tty without a terminal says so and writes log lines instead', () => {
    const d = caseDir();
    mkdirSync(join(d, 'in'));
    for (let i = 0; i < 6; i++) writeFileSync(join(d, `in/f${i}.npy`), npy(512, 1024, i));
    const r = cli(['normalize', 'in', '--out-dir', 'o', '--progress', 'tty', '--progress-interval', '0.001'], { cwd: d });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/warning: --progress tty, but standard error is not a terminal: progress is written as log lines instead/);
    expect(r.stderr).toMatch(/rmsnorm-wasm: progress after /);
  });

  it('--help quotes a log line in the very format the log lines have', () => {
    const help = cli(['--help']).stdout;
    const example = /^ {4}(rmsnorm-wasm: progress after .*)$/m.exec(help)?.[1];
    expect(example).toBeDefined();
    // Numbers and their units aside (a duration in ms or s, bytes in kB, MB or GB).
    const shape = (l: string) => l.replace(/\d[\d.,]*/g, '#').replace(/ m?s\b/g, ' T').replace(/ [kMG]?B/g, ' B');
    const d = caseDir();
    mkdirSync(join(d, 'in'));
    for (let i = 0; i < 4; i++) writeFileSync(join(d, `in/f${i}.npy`), npy(512, 1024, i));
    const r = cli(['normalize', 'in', '--out-dir', 'o', '--progress-interval', '0.001'], { cwd: d });
    const real = r.stderr.split('\n').filter((l) => l.startsWith('rmsnorm-wasm: progress')).map(shape);
    expect(real.length).toBeGreaterThan(0);
    expect(real).toContain(shape(example!));
  });

  it('a run refused before it starts makes nothing: a bad pattern, a missing weight, a weight that fits no row, a missing input, an unknown format', () => {
    const d = caseDir();
    mkdirSync(join(d, 'in/deep/er'), { recursive: true });
    writeFileSync(join(d, 'in/deep/er/a.npy'), npy(4, 8));
    writeFileSync(join(d, 'w7.npy'), Buffer.concat([npyHeader([7]), Buffer.from(new Float32Array(7).fill(1).buffer)]));
    for (const extra of [['in/[b-a]*'], ['in', '--weight', 'nope.npy'], ['in', '--weight', 'w7.npy'], ['missing'], ['in', '--format', 'zip']]) {
      const r = cli(['normalize', ...extra, '--out-dir', 'o/deeper'], { cwd: d });
      expect(r.code, r.stderr).not.toBe(0);
      expect(existsSync(join(d, 'o')), `${extra.join(' ')}: ${r.stderr}`).toBe(false);
    }
  });
});
