/**
 * A generator of what the batch tool walks and owns (the counterpart of the damaged-header
 * generator in hostile.test.ts): folder shapes with links of every kind, FIFOs, hidden and
 * odd names and unreadable folders; output folders with planted links, hard links, locks and
 * manifests of any content; glob patterns; option values good and bad; a second run at once;
 * a stop signal at a random moment; run as root or as another user. Whatever the case, the
 * command ends with a documented exit code, in bounded time and memory, never aborts, leaves
 * the trees outside the given folders (and the inputs) byte-identical, leaves no temporary,
 * never has two writers of one shard at a sampled instant, and never removes a lock that is
 * not its own.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, linkSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, foreignLock, npy, startProcess, tempsIn, treeHash, type Started } from './processes.js';

const root = mkdtempSync(join(tmpdir(), 'rmsnorm-treegen-'));
chmodSync(root, 0o755);
afterAll(() => rmSync(root, { recursive: true, force: true }));

const asRoot = process.getuid?.() === 0;
const NOBODY = 65534;
/** Cases the generator runs (each one or two real runs of the command). */
const CASES = Number(process.env.TREE_CASES ?? 150);

const RSS_PROBE = join(root, 'rss-probe.mjs');
writeFileSync(RSS_PROBE, "import { writeSync } from 'node:fs';\nprocess.on('exit', () => writeSync(2, `maxrss=${process.resourceUsage().maxRSS}\\n`));\n");

/** What may sit in the input folder. */
const ENTRY = fc.constantFrom(
  'npy', 'npy', 'npy', 'big', 'junk', 'empty', 'npz-junk', 'safetensors-junk', 'dir', 'link-file', 'link-dir-in', 'link-dir-out', 'link-dangling', 'link-loop',
  'link-outside-file', 'hardlink-outside', 'fifo', 'hidden', 'newline-name', 'latin1-name', 'unreadable-dir', 'unreadable-file',
);
/** What may be planted in the output folder before the run. */
const PLANT = fc.constantFrom(
  'nothing', 'manifest-symlink', 'manifest-hardlink', 'manifest-fifo', 'manifest-dir', 'manifest-junk', 'manifest-records', 'lock-symlink', 'lock-hardlink',
  'lock-garbage', 'lock-foreign-live', 'lock-foreign-odd', 'lock-fifo', 'lock-dir', 'output-symlink', 'output-hardlink', 'subdir-symlink', 'out-is-file',
);
/** Good option values, and (`bad`) one of them made bad. */
const GOOD_FLAGS = fc.record({
  shard: fc.constantFrom(null, '0/1', '0/2', '1/2', '2/3', '0/1000000', '999999/1000000'),
  lockWait: fc.constantFrom(null, '0', '0.3'),
  lockStale: fc.constantFrom(null, '0.3'),
  threads: fc.constantFrom(null, '1', '2'),
  checksum: fc.boolean(),
  keepGoing: fc.boolean(),
  noFollow: fc.boolean(),
  force: fc.boolean(),
  eps: fc.constantFrom(null, '1e-5'),
  progress: fc.constantFrom(null, 'log', 'tty', 'none'),
});
const BAD = fc.constantFrom(
  ['shard', '0/2147483648'], ['shard', '3/2'], ['shard', 'x/y'], ['shard', '0/0'], ['lockStale', 'nan'], ['threads', '0'], ['eps', '-1'], ['eps', 'abc'], ['progress', 'sometimes'],
);
const FLAGS = fc.tuple(GOOD_FLAGS, fc.oneof({ arbitrary: fc.constant(null), weight: 5 }, { arbitrary: BAD, weight: 1 })).map(([f, bad]) => (bad ? { ...f, [bad[0]]: bad[1] } : f));
/** A glob built from names the trees use. */
const GLOB = fc
  .array(fc.constantFrom('**', '*', 'd*', '?', '[a-f]*', '[!x]*', '*.npy', '*.np?', 'f[0-9]*', 'sub'), { minLength: 1, maxLength: 4 })
  .chain((p) => fc.constantFrom(p, p, p, p, p, [...p, '[z-a]']))
  .map((p) => p.join('/'));
const CASE = fc.record({
  tree: fc.array(fc.tuple(ENTRY, fc.nat({ max: 2 })), { minLength: 1, maxLength: 10 }),
  plants: fc.array(PLANT, { maxLength: 3 }),
  input: fc.oneof(fc.constant({ kind: 'dir' as const }), GLOB.map((g) => ({ kind: 'glob' as const, g }))),
  flags: FLAGS,
  second: fc.boolean(),
  stop: fc.oneof(fc.constant(null), fc.record({ sig: fc.constantFrom('SIGTERM', 'SIGINT', 'SIGHUP'), ms: fc.integer({ min: 0, max: 1500 }) })),
  nobody: asRoot ? fc.boolean() : fc.constant(false),
  seed: fc.nat(),
});
type Case = typeof CASE extends fc.Arbitrary<infer T> ? T : never;

/** A file big enough (8 MiB) that a run is still writing when a stop comes. */
const BIG = npy(2048, 1024, 7);

/** The documented exit codes. */
const CODES = [0, 1, 2, 75, 129, 130, 143];

let caseNo = 0;
/** How the cases' runs ended, by exit code (printed: the generator must reach every kind of end). */
const ends = new Map<string, number>();

/** Builds the case's folders: in/ (the tree), out/ (what is planted), outside/ (what must not change). */
function build(c: Case, d: string): void {
  const inDir = join(d, 'in');
  const outside = join(d, 'outside');
  mkdirSync(join(outside, 'dir'), { recursive: true });
  writeFileSync(join(outside, 'victim'), 'not to be touched\nan unterminated line');
  writeFileSync(join(outside, 'victim.npy'), npy(3, 8, 99));
  writeFileSync(join(outside, 'dir/inner.npy'), npy(3, 8, 98));
  mkdirSync(inDir);
  const dirs = [inDir];
  c.tree.forEach(([kind, depth], i) => {
    const at = dirs[Math.min(depth, dirs.length - 1)]!;
    const p = (name: string) => join(at, name);
    switch (kind) {
      case 'npy':
        writeFileSync(p(`f${i}.npy`), npy(2 + (i % 5), 8, i));
        break;
      case 'big':
        writeFileSync(p(`b${i}.npy`), BIG);
        break;
      case 'junk':
        writeFileSync(p(`j${i}.npy`), Buffer.from(`\x93NUMPY junk ${c.seed}`));
        break;
      case 'empty':
        writeFileSync(p(`e${i}.npy`), '');
        break;
      case 'npz-junk':
        writeFileSync(p(`z${i}.npz`), Buffer.from([0x50, 0x4b, 3, 4, ...Array.from({ length: 40 }, (_, k) => (c.seed + k) % 256)]));
        break;
      case 'safetensors-junk': {
        const h = Buffer.alloc(8);
        h.writeBigUint64LE(BigInt(c.seed % 5000));
        writeFileSync(p(`s${i}.safetensors`), Buffer.concat([h, Buffer.from('{"x":{"dtype":"F32","shape":[1e400],"data_offsets":[0,4]}}')]));
        break;
      }
      case 'dir': {
        const sub = p(`d${i}`);
        mkdirSync(sub);
        dirs.push(sub);
        writeFileSync(join(sub, `f${i}.npy`), npy(2, 8, i + 50));
        break;
      }
      case 'link-file':
        if (existsSync(join(inDir, 'f0.npy'))) symlinkSync(join(inDir, 'f0.npy'), p(`l${i}.npy`));
        break;
      case 'link-dir-in':
        symlinkSync(inDir, p(`ld${i}`)); // back to the top: a loop
        break;
      case 'link-dir-out':
        symlinkSync(join(outside, 'dir'), p(`lo${i}`));
        break;
      case 'link-dangling':
        symlinkSync(join(d, 'nowhere.npy'), p(`dang${i}.npy`));
        break;
      case 'link-loop':
        symlinkSync(`loop${i}.npy`, p(`loop${i}.npy`));
        break;
      case 'link-outside-file':
        symlinkSync(join(outside, 'victim.npy'), p(`lv${i}.npy`));
        break;
      case 'hardlink-outside':
        try {
          linkSync(join(outside, 'victim.npy'), p(`hv${i}.npy`));
        } catch {
          // already linked under this name
        }
        break;
      case 'fifo':
        spawnSync('mkfifo', [p(`fifo${i}.npy`)]);
        break;
      case 'hidden':
        writeFileSync(p(`.h${i}.npy`), npy(2, 8));
        break;
      case 'newline-name':
        writeFileSync(p(`n\n${i}.npy`), npy(2, 8, i));
        break;
      case 'latin1-name':
        writeFileSync(Buffer.concat([Buffer.from(`${at}/x`), Buffer.from([0xe9, 0xff]), Buffer.from(`${i}.npy`)]), npy(2, 8, i));
        break;
      case 'unreadable-dir': {
        const sub = p(`u${i}`);
        mkdirSync(sub);
        writeFileSync(join(sub, 'a.npy'), npy(2, 8));
        chmodSync(sub, 0);
        break;
      }
      case 'unreadable-file':
        writeFileSync(p(`r${i}.npy`), npy(2, 8), { mode: 0 });
        break;
    }
  });
  const out = join(d, 'out');
  for (const plant of c.plants) {
    if (plant === 'out-is-file') {
      if (!existsSync(out)) writeFileSync(out, 'a file where the folder goes');
      continue;
    }
    if (existsSync(out) && !lstatSync(out).isDirectory()) continue;
    mkdirSync(out, { recursive: true });
    const at = (name: string) => join(out, name);
    const free = (name: string) => !existsSync(at(name)) && !isLink(at(name));
    switch (plant) {
      case 'manifest-symlink':
        if (free('manifest.jsonl')) symlinkSync(join(outside, 'victim'), at('manifest.jsonl'));
        break;
      case 'manifest-hardlink':
        if (free('manifest.jsonl')) linkSync(join(outside, 'victim'), at('manifest.jsonl'));
        break;
      case 'manifest-fifo':
        if (free('manifest.jsonl')) spawnSync('mkfifo', [at('manifest.jsonl')]);
        break;
      case 'manifest-dir':
        if (free('manifest.jsonl')) mkdirSync(at('manifest.jsonl'));
        break;
      case 'manifest-junk':
        if (free('manifest.jsonl')) writeFileSync(at('manifest.jsonl'), `{"output":null}\n[]\n${'x'.repeat(c.seed % 3000)}\n{"output":"f0.npy","options":null,"inputSize":"no"}`);
        break;
      case 'manifest-records':
        if (free('manifest.jsonl')) {
          const rec = { input: join(d, 'in/f0.npy'), output: 'f0.npy', recordedAt: 1e15, inputSize: -1, inputMtimeMs: 0, outputSize: 1, outputMtimeMs: 0, format: 'npy', dtype: 'float32', outDtype: 'float32', rows: 1, dim: 8, shape: [1, 8], options: {}, seconds: 0 };
          writeFileSync(at('manifest.jsonl'), `${JSON.stringify(rec)}\n${JSON.stringify({ ...rec, shape: Array(100).fill(1), part: { index: 3, count: 2, start: 0, end: 1 } })}\n`);
        }
        break;
      case 'lock-symlink':
        if (free('rmsnorm.lock')) symlinkSync(join(outside, 'victim'), at('rmsnorm.lock'));
        break;
      case 'lock-hardlink':
        if (free('rmsnorm.lock')) linkSync(join(outside, 'victim'), at('rmsnorm.lock'));
        break;
      case 'lock-garbage':
        if (free('rmsnorm.lock')) writeFileSync(at('rmsnorm.lock'), Buffer.from(Array.from({ length: c.seed % 200 }, (_, k) => (k * 37 + c.seed) % 256)));
        break;
      case 'lock-foreign-live':
        if (free('rmsnorm.lock')) writeFileSync(at('rmsnorm.lock'), foreignLock());
        break;
      case 'lock-foreign-odd':
        if (free('rmsnorm.lock')) writeFileSync(at('rmsnorm.lock'), foreignLock({ pid: [0, -1, 2 ** 40, 'x', null][c.seed % 5], beatAt: 1e17 }));
        break;
      case 'lock-fifo':
        if (free('rmsnorm.lock')) spawnSync('mkfifo', [at('rmsnorm.lock')]);
        break;
      case 'lock-dir':
        if (free('rmsnorm.lock')) mkdirSync(at('rmsnorm.lock'));
        break;
      case 'output-symlink':
        if (free('f0.npy')) symlinkSync(join(outside, 'victim.npy'), at('f0.npy'));
        break;
      case 'output-hardlink':
        if (free('f0.npy')) linkSync(join(outside, 'victim.npy'), at('f0.npy'));
        break;
      case 'subdir-symlink':
        if (free('d1')) symlinkSync(join(outside, 'dir'), at('d1'));
        break;
    }
  }
}

function isLink(p: string): boolean {
  try {
    return lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}

/** The command line of case `c`. */
function argsOf(c: Case, d: string): string[] {
  const f = c.flags;
  const input = c.input.kind === 'dir' ? join(d, 'in') : join(d, 'in', c.input.g);
  const a = ['normalize', input, '--out-dir', join(d, 'out')];
  if (f.shard !== null) a.push('--shard', f.shard);
  if (f.lockWait !== null) a.push('--lock-wait', f.lockWait);
  if (f.lockStale !== null) a.push('--lock-stale', f.lockStale);
  // A lock that is not this tool's (or another machine's) is waited on until it has been still for
  // --lock-stale seconds: a minute by default, longer than a case may take.
  else if (f.lockWait === null) a.push('--lock-stale', '0.5');
  if (f.threads !== null) a.push('--threads', f.threads);
  if (f.eps !== null) a.push('--eps', f.eps);
  if (f.progress !== null) a.push('--progress', f.progress, '--progress-interval', '0.05');
  for (const [on, flag] of [[f.checksum, '--checksum'], [f.keepGoing, '--keep-going'], [f.noFollow, '--no-follow-symlinks'], [f.force, '--force']] as const) if (on) a.push(flag);
  return a;
}

/** Starts the command of case `c` (as nobody, when the case says). */
function run(c: Case, d: string): Started {
  const node = ['--import', RSS_PROBE, '--max-old-space-size=512', BIN, ...argsOf(c, d)];
  return c.nobody
    ? startProcess('setpriv', [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', process.execPath, ...node])
    : startProcess(process.execPath, node);
}

describe('a generator of what the tool walks and owns', () => {
  it(`${CASES} cases: documented exit codes, bounded time and memory, nothing outside changed, no temporary, one writer at a time`, async () => {
    await fc.assert(
      fc.asyncProperty(CASE, async (c) => {
        const d = join(root, `g${caseNo++}`);
        mkdirSync(d);
        chmodSync(d, 0o755);
        build(c, d);
        if (c.nobody) spawnSync('chown', ['-R', `${NOBODY}:${NOBODY}`, d]);
        const outsideBefore = treeHash(join(d, 'outside'));
        const lockPlanted = existsSync(join(d, 'out/rmsnorm.lock')) && lstatSync(join(d, 'out/rmsnorm.lock')).isFile() ? readFileSync(join(d, 'out/rmsnorm.lock')) : null;
        const runs = [run(c, d), ...(c.second ? [run(c, d)] : [])];
        if (c.stop) {
          const { sig, ms } = c.stop;
          setTimeout(() => runs[0]!.p.kill(sig as NodeJS.Signals), ms);
        }
        const timer = setTimeout(() => runs.forEach((r) => r.p.kill('SIGKILL')), 45_000);
        // One writer at a time: the work processes with temporaries in out/, sampled.
        let ended = 0;
        runs.forEach((r) => void r.done.then(() => ended++));
        let two = 0;
        while (ended < runs.length) {
          if (existsSync(join(d, 'out')) && new Set(tempsIn(join(d, 'out')).map((t) => t.pid)).size > 1) two++;
          await new Promise((ok) => setTimeout(ok, 3));
        }
        clearTimeout(timer);
        const what = `case ${JSON.stringify(c)}`;
        for (const [k, r] of runs.entries()) {
          const end = await r.done;
          // A stop signal that comes before Node has started the command's handlers ends it by its default action, as a shell reports: 128 + its number.
          ends.set(String(end.code ?? end.signal), (ends.get(String(end.code ?? end.signal)) ?? 0) + 1);
          if (process.env.TREE_DEBUG && end.code === Number(process.env.TREE_DEBUG)) console.log(r.err.split('\n')[0]);
          if (k === 0 && c.stop && end.signal === c.stop.sig) continue;
          expect(end.signal, `${what}: killed (a hang?) ${r.err}`).toBe(null);
          expect(CODES, `${what}: exit ${end.code}: ${r.err}`).toContain(end.code);
          expect(r.err, what).not.toMatch(/Assertion failed|FATAL|node:internal|\n\s+at \S+ \(|Invalid regular expression|Cannot (read|convert)/);
          const rss = Number(/maxrss=(\d+)/.exec(r.err)?.[1] ?? 0) / 1024;
          expect(rss, what).toBeLessThan(450);
          expect(end.ms, what).toBeLessThan(40_000);
        }
        expect(two, `${what}: two writers at once`).toBe(0);
        expect(treeHash(join(d, 'outside')), `${what}: the outside tree changed`).toBe(outsideBefore);
        spawnSync('chmod', ['-R', 'u+rwx', join(d, 'in')]);
        if (existsSync(join(d, 'out')) && lstatSync(join(d, 'out')).isDirectory()) {
          expect(tempsIn(join(d, 'out')), what).toEqual([]);
          const lock = join(d, 'out/rmsnorm.lock');
          // A lock left is the one planted (a live foreign run's), never one of these runs'.
          if (existsSync(lock) && lstatSync(lock).isFile() && lockPlanted === null) {
            expect(readdirSync(join(d, 'out')), `${what}: a lock of these runs left behind`).not.toContain('rmsnorm.lock');
          }
        }
        rmSync(d, { recursive: true, force: true });
      }),
      { numRuns: CASES, seed: 20261202, endOnFailure: true },
    );
    console.log(`tree generator: ${CASES} cases, runs ending by exit code: ${JSON.stringify(Object.fromEntries(ends))}`);
    // Every kind of end was reached: done, a failed file, a usage error, a stop.
    for (const code of ['0', '1', '2']) expect(ends.get(code) ?? 0, code).toBeGreaterThan(0);
    expect((ends.get('143') ?? 0) + (ends.get('130') ?? 0) + (ends.get('129') ?? 0)).toBeGreaterThan(0);
  }, 900_000);
});

