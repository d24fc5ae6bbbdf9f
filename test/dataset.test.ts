/**
 * Datasets: `rmsnorm-wasm normalize IN... --out-dir DIR` and `normalizeDataset`. Many inputs
 * (directories, globs) into one directory at the same relative paths; the result of every
 * file byte-identical to `normalizeFile` of it alone; resume (skip what the manifest records,
 * redo what changed, --force); N shard processes at once on a shared directory covering the
 * dataset exactly once; a shard killed with SIGKILL half-way and run again giving the same
 * outputs, with no partial file ever under an output name; bad files stopping the run or, with
 * --keep-going, listed while the rest are written.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { normalizeDataset, normalizeFile, npyHeader, parseNpyHeader, type DatasetProgress, type DatasetRecord } from '../dist/node/index.js';
import { partName, shardOf, splitLarge } from '../dist/node/dataset/shards.js';

const BIN = fileURLToPath(new URL('../bundle/node/bin.js', import.meta.url));
const FIX = fileURLToPath(new URL('./fixtures/npy/', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'rmsnorm-dataset-'));
const DATA = join(root, 'data');
const REF = join(root, 'ref');
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The dataset: 30 .npy files in nested folders, float32 and float16, 1 row to 700 rows of 96. */
const RELS = Array.from({ length: 30 }, (_, i) => `${['', 'a/', 'a/b/', 'c/'][i % 4]}part-${String(i).padStart(3, '0')}.npy`);
function makeDataset(dir: string): void {
  RELS.forEach((rel, i) => {
    const rows = 1 + ((i * 97) % 700);
    const dim = 96;
    const half = i % 5 === 0;
    const x = new Float32Array(rows * dim).map((_, k) => Math.sin(k * 0.37 + i) * (1 + (k % 7)));
    const data = half ? new Uint16Array(x.length).map((_, k) => 0x3c00 + ((k * 13 + i) % 0x0800)) : x;
    mkdirSync(dirname(join(dir, rel)), { recursive: true });
    writeFileSync(join(dir, rel), Buffer.concat([npyHeader([rows, dim], half ? 'float16' : 'float32'), Buffer.from(data.buffer)]));
  });
  writeFileSync(join(dir, 'README.txt'), 'not an input');
  writeFileSync(join(dir, '.hidden.npy'), 'not an input either');
}

function cli(...args: string[]) {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Every file under `dir` (relative path → bytes), manifests and temporaries apart. */
function outputs(dir: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const rel of readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    const base = rel.split('/').pop()!;
    if (base.startsWith('manifest') || base.startsWith('.') || !base.endsWith('.npy')) continue;
    out.set(rel, readFileSync(join(dir, rel)));
  }
  return out;
}

/** The manifest lines of `dir`, all shards. */
function records(dir: string): DatasetRecord[] {
  return readdirSync(dir)
    .filter((f) => f.startsWith('manifest'))
    .flatMap((f) => readFileSync(join(dir, f), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as DatasetRecord));
}

function expectSameAsReference(dir: string): void {
  const got = outputs(dir);
  expect([...got.keys()].sort()).toEqual([...RELS].sort());
  for (const rel of RELS) expect(got.get(rel)!.equals(readFileSync(join(REF, rel))), rel).toBe(true);
}

beforeAll(async () => {
  makeDataset(DATA);
  // The reference: normalizeFile on each file alone.
  for (const rel of RELS) {
    mkdirSync(dirname(join(REF, rel)), { recursive: true });
    await normalizeFile(join(DATA, rel), join(REF, rel), { eps: 1e-5, threads: 1 });
  }
}, 120_000);

describe('one run over a directory', () => {
  const out = join(root, 'one');

  it('writes every .npy at its relative path, each byte-identical to normalizeFile of it alone, and a manifest line per output', () => {
    const r = cli('normalize', DATA, '--out-dir', out, '--eps', '1e-5', '--checksum', '--json');
    expect(r.code, r.stderr).toBe(0);
    const s = JSON.parse(r.stdout);
    expect(s).toMatchObject({ files: 30, written: 30, skipped: 0, failed: [] });
    expectSameAsReference(out);
    const recs = records(out);
    expect(recs.map((x) => x.output).sort()).toEqual([...RELS].sort());
    for (const rec of recs) {
      const bytes = readFileSync(join(out, rec.output));
      expect(rec.outputSize).toBe(bytes.length);
      expect(rec.sha256).toMatch(/^[0-9a-f]{64}$/);
      expect(rec.sha256).toBe(sha256(bytes));
      expect(rec.options).toMatchObject({ eps: 1e-5 });
    }
  });

  it('run again: everything is skipped; a changed input is redone; --force redoes all; another eps redoes all', () => {
    let r = cli('normalize', DATA, '--out-dir', out, '--eps', '1e-5', '--json');
    expect(JSON.parse(r.stdout)).toMatchObject({ written: 0, skipped: 30 });
    expect(cli('normalize', DATA, '--out-dir', out, '--eps', '1e-5').stdout).toMatch(/^nothing to do: 30 of 30 files already done/);
    const touched = join(DATA, RELS[3]!);
    utimesSync(touched, new Date(), new Date(Date.now() + 5000));
    r = cli('normalize', DATA, '--out-dir', out, '--eps', '1e-5', '--json');
    expect(JSON.parse(r.stdout)).toMatchObject({ written: 1, skipped: 29 });
    r = cli('normalize', DATA, '--out-dir', out, '--eps', '1e-5', '--json', '--force');
    expect(JSON.parse(r.stdout)).toMatchObject({ written: 30, skipped: 0 });
    r = cli('normalize', DATA, '--out-dir', out, '--eps', '1e-4', '--json');
    expect(JSON.parse(r.stdout)).toMatchObject({ written: 30, skipped: 0 });
    r = cli('normalize', DATA, '--out-dir', out, '--eps', '1e-5', '--json');
    expect(JSON.parse(r.stdout)).toMatchObject({ written: 30 });
    expectSameAsReference(out);
  });

  it('a manifest whose records list absent options as null, leave out options at their defaults, in another order, still vouches for its outputs', () => {
    const path = join(out, 'manifest.jsonl');
    const lines = readFileSync(path, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as DatasetRecord);
    expect(lines.length).toBeGreaterThanOrEqual(30);
    // As a version before `offset` and `castingMode` existed wrote them: without those (at their defaults), nulls for what was absent.
    const older = lines.map((rec) => ({
      ...rec,
      options: { outDtype: null, tensors: null, format: null, dim: null, ...Object.fromEntries(Object.entries(rec.options).filter(([k]) => k !== 'offset' && k !== 'castingMode').reverse()) },
    }));
    writeFileSync(path, older.map((rec) => JSON.stringify(rec)).join('\n') + '\n');
    let r = cli('normalize', DATA, '--out-dir', out, '--eps', '1e-5', '--json');
    expect(JSON.parse(r.stdout)).toMatchObject({ written: 0, skipped: 30 });
    // A value the record does not have is not taken for the default.
    r = cli('normalize', DATA, '--out-dir', out, '--eps', '1e-5', '--partial', '0.5', '--json');
    expect(JSON.parse(r.stdout)).toMatchObject({ written: 30, skipped: 0 });
    r = cli('normalize', DATA, '--out-dir', out, '--eps', '1e-5', '--json');
    expect(JSON.parse(r.stdout)).toMatchObject({ written: 30, skipped: 0 });
    expectSameAsReference(out);
  });

  it('--no-fsync gives the same bytes; an output directory that is an input directory is refused before anything is written', () => {
    const o = join(root, 'nofsync');
    const r = cli('normalize', DATA, '--out-dir', o, '--eps', '1e-5', '--no-fsync', '--json');
    expect(r.code, r.stderr).toBe(0);
    expectSameAsReference(o);
    const here = join(root, 'inplace');
    mkdirSync(here);
    copyFileSync(join(DATA, RELS[0]!), join(here, 'x.npy'));
    const before = readFileSync(join(here, 'x.npy'));
    const clash = cli('normalize', here, '--out-dir', here);
    expect(clash.code).toBe(1);
    expect(clash.stderr).toMatch(/inplace is the output directory: choose an output directory apart from the inputs/);
    // The same directory under another name (a link) is found too.
    symlinkSync(here, join(root, 'inplace-link'));
    const linked = cli('normalize', join(here, 'x.npy'), '--out-dir', join(root, 'inplace-link'));
    expect(linked.code).toBe(1);
    expect(linked.stderr).toMatch(/x\.npy would be overwritten by its own output/);
    expect(readFileSync(join(here, 'x.npy')).equals(before)).toBe(true);
  });

  it('globs and several inputs; two inputs writing one output are refused', () => {
    const o = join(root, 'glob');
    const r = cli('normalize', join(DATA, 'a/**/*.npy'), join(DATA, 'part-000.npy'), '--out-dir', o, '--eps', '1e-5', '--json');
    expect(r.code, r.stderr).toBe(0);
    const want = RELS.filter((x) => x.startsWith('a/')).map((x) => x.slice(2)).concat('part-000.npy').sort();
    expect([...outputs(o).keys()].sort()).toEqual(want);
    const clash = cli('normalize', join(DATA, 'part-000.npy'), join(DATA, 'c', 'part-003.npy'), join(DATA, 'part-000.npy'), '--out-dir', o);
    expect(clash.code).toBe(1);
    expect(clash.stderr).toMatch(/would both be written to part-000\.npy/);
  });
});

describe('shards', () => {
  const shared = join(root, 'shared');
  const start = (i: number, n: number) =>
    spawn(process.execPath, [BIN, 'normalize', DATA, '--out-dir', shared, '--eps', '1e-5', '--shard', `${i}/${n}`, '--threads', '1', '--verbose'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  const exit = (p: ReturnType<typeof spawn>) => new Promise<number | null>((ok) => p.on('exit', (code) => ok(code)));

  it('3 processes at once on one directory: together every output once, byte-identical to one process', async () => {
    const codes = await Promise.all([0, 1, 2].map((i) => exit(start(i, 3))));
    expect(codes).toEqual([0, 0, 0]);
    expectSameAsReference(shared);
    const recs = records(shared);
    expect(recs.map((r) => r.output).sort()).toEqual([...RELS].sort()); // each exactly once
    expect(readdirSync(shared).filter((f) => f.startsWith('manifest')).sort()).toEqual([0, 1, 2].map((i) => `manifest.shard-${i}-of-3.jsonl`));
  }, 120_000);

  it('a shard killed with SIGKILL half-way leaves only complete outputs; run again, the same result', async () => {
    const dir = join(root, 'killed');
    const p = spawn(process.execPath, [BIN, 'normalize', DATA, '--out-dir', dir, '--eps', '1e-5', '--shard', '0/2', '--threads', '1', '--verbose'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let seen = 0;
    await new Promise<void>((ok) => {
      p.stderr!.on('data', (d: Buffer) => {
        seen += (d.toString().match(/^written /gm) ?? []).length;
        if (seen >= 2) ok();
      });
      p.on('exit', () => ok());
    });
    p.kill('SIGKILL');
    await exit(p);
    // Whatever is under an output name is complete.
    const partial = outputs(dir);
    for (const [rel, bytes] of partial) expect(bytes.equals(readFileSync(join(REF, rel))), rel).toBe(true);
    expect(cli('normalize', DATA, '--out-dir', dir, '--eps', '1e-5', '--shard', '0/2', '--json').code).toBe(0);
    expect(cli('normalize', DATA, '--out-dir', dir, '--eps', '1e-5', '--shard', '1/2', '--json').code).toBe(0);
    expectSameAsReference(dir);
    const leftovers = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.split('/').pop()!.startsWith('.'));
    expect(leftovers).toEqual([]);
  }, 120_000);

  it('--shard is checked', () => {
    for (const bad of ['3/3', '1', 'a/b', '-1/2']) {
      const r = cli('normalize', DATA, '--out-dir', join(root, 'x'), '--shard', bad);
      expect(r.code, bad).toBe(2);
      expect(r.stderr).toMatch(/--shard must be I\/N/);
    }
  });
});

describe('bad files in a dataset', () => {
  const bad = join(root, 'bad');
  /** A version 1.0 .npy whose header is `dict`, with `data` bytes after it. */
  const npyWith = (dict: string, data: number) => {
    const body = dict.padEnd(118, ' ') + '\n';
    return Buffer.concat([Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, body.length, 0]), Buffer.from(body, 'latin1'), Buffer.alloc(data)]);
  };
  const CASES: [string, (p: string) => void, RegExp][] = [
    ['truncated.npy', (p) => writeFileSync(p, readFileSync(join(DATA, RELS[1]!)).subarray(0, 500)), /truncated/],
    ['malformed.npy', (p) => writeFileSync(p, npyWith("{'descr' junk: '<f4', 'fortran_order': False, 'shape': (2, 3)}", 24)), /malformed \.npy header/],
    ['fortran.npy', (p) => copyFileSync(join(FIX, 'fortran.npy'), p), /Fortran-order/],
    ['big-endian.npy', (p) => copyFileSync(join(FIX, 'big-endian.npy'), p), /big-endian/],
    ['int32.npy', (p) => writeFileSync(p, npyWith("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }", 24)), /unsupported dtype "<i4"/],
    ['repeated-key.npy', (p) => writeFileSync(p, npyWith("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'fortran_order': True}", 24)), /appears twice/],
  ];
  beforeAll(() => {
    mkdirSync(bad, { recursive: true });
    for (const rel of RELS.slice(0, 6)) copyFileSync(join(DATA, rel), join(bad, rel.replace(/\//g, '_')));
    for (const [name, make] of CASES) make(join(bad, name));
  });

  it('by default the run stops at the first bad file, naming it; what was finished stays complete and recorded', () => {
    const out = join(root, 'bad-out');
    const r = cli('normalize', bad, '--out-dir', out, '--eps', '1e-5', '--threads', '1');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^rmsnorm-wasm: error: ${bad}/[a-z0-9-]+\\.npy: .* \\((\\d+ other files? written and recorded in |no other file written\\))`));
    for (const rec of records(out)) expect(existsSync(join(out, rec.output))).toBe(true);
  });

  it('--keep-going writes the good files and lists every bad one with its reason (exit code 1)', () => {
    const out = join(root, 'bad-keep');
    const r = cli('normalize', bad, '--out-dir', out, '--eps', '1e-5', '--keep-going', '--json');
    expect(r.code).toBe(1);
    const s = JSON.parse(r.stdout) as { written: number; failed: { input: string; error: string }[] };
    expect(s.written).toBe(6);
    expect(s.failed.map((f) => f.input.split('/').pop()).sort()).toEqual(CASES.map((c) => c[0]).sort());
    for (const [name, , reason] of CASES) {
      const f = s.failed.find((x) => x.input.endsWith(`/${name}`))!;
      expect(f.error, name).toMatch(reason);
      expect(f.error.startsWith(join(bad, name)), f.error).toBe(true);
      expect(r.stderr).toContain(`rmsnorm-wasm: failed: ${join(bad, name)}`);
    }
    expect(records(out)).toHaveLength(6);
  });
});

describe('normalizeDataset (the API)', () => {
  it('progress up to the total, one event per file, a summary; then all skipped', async () => {
    const out = join(root, 'api');
    const seen: DatasetProgress[] = [];
    const events: string[] = [];
    const s = await normalizeDataset([DATA], out, { eps: 1e-5, onProgress: (p) => seen.push(p), onFile: (e) => events.push(e.status) });
    expect(s).toMatchObject({ files: 30, written: 30, skipped: 0, failed: [] });
    expect(events).toHaveLength(30);
    const last = seen[seen.length - 1]!;
    expect(last.files).toBe(30);
    expect(last.rows).toBe(s.rows);
    expect(seen.every((p, i) => i === 0 || p.files >= seen[i - 1]!.files)).toBe(true);
    expectSameAsReference(out);
    const again = await normalizeDataset(DATA, out, { eps: 1e-5 });
    expect(again).toMatchObject({ written: 0, skipped: 30 });
  });

  it('an abort rejects with the reason; what was written is complete and recorded; the rest follows on the next run', async () => {
    const out = join(root, 'api-abort');
    const ac = new AbortController();
    let n = 0;
    const run = normalizeDataset(DATA, out, { eps: 1e-5, signal: ac.signal, onFile: () => ++n === 3 && ac.abort(new Error('stop')) });
    await expect(run).rejects.toThrow('stop');
    for (const [rel, bytes] of outputs(out)) expect(bytes.equals(readFileSync(join(REF, rel))), rel).toBe(true);
    const s = await normalizeDataset(DATA, out, { eps: 1e-5 });
    expect(s.written + s.skipped).toBe(30);
    expect(s.skipped).toBeGreaterThanOrEqual(3);
    expectSameAsReference(out);
  });

  it('bad arguments are TypeErrors and RangeErrors naming them', async () => {
    await expect(normalizeDataset([], 'o')).rejects.toThrow(TypeError);
    await expect(normalizeDataset(DATA, 3 as unknown as string)).rejects.toThrow(/outDir must be a path/);
    await expect(normalizeDataset(DATA, 'o', { shard: { index: 2, count: 2 } })).rejects.toThrow(/options\.shard\.index must be an integer from 0 to 1/);
    await expect(normalizeDataset(DATA, 'o', { filesInFlight: 0 })).rejects.toThrow(RangeError);
    await expect(normalizeDataset(DATA, 'o', { bogus: 1 } as never)).rejects.toThrow(/bogus/);
    // Each kind of run option by its rule, and a file option by the file functions' rule.
    await expect(normalizeDataset(DATA, 'o', { force: 'yes' } as never)).rejects.toThrow(new TypeError('normalizeDataset: options.force must be a boolean, got string "yes"'));
    await expect(normalizeDataset(DATA, 'o', { lockWait: -1 })).rejects.toThrow(RangeError);
    await expect(normalizeDataset(DATA, 'o', { onFile: 1 } as never)).rejects.toThrow(/options\.onFile must be a function/);
    await expect(normalizeDataset(DATA, 'o', { durable: 1 } as never)).rejects.toThrow(/options\.durable must be a boolean/);
    await expect(normalizeDataset(DATA, 'o', { weight: new Int32Array(4) } as never)).rejects.toThrow(/options\.weight must be/);
    expect(existsSync('o')).toBe(false);
  });
});

/** An .npy file's shape and its data bytes. */
function npyParts(b: Buffer): { shape: number[]; data: Buffer } {
  const h = parseNpyHeader(b, b.length, 'file');
  return { shape: h.shape, data: b.subarray(h.dataOffset) };
}

describe('a file split between shards', () => {
  const dir = join(root, 'split');
  const BIG = { rows: 1000, dim: 96 };
  beforeAll(async () => {
    mkdirSync(join(dir, 'in', 'sub'), { recursive: true });
    const x = new Float32Array(BIG.rows * BIG.dim).map((_, k) => Math.sin(k * 0.11) * (1 + (k % 13)));
    writeFileSync(join(dir, 'in', 'big.npy'), Buffer.concat([npyHeader([BIG.rows, BIG.dim]), Buffer.from(x.buffer)]));
    // A 3-D array is cut along its first axis: blocks of 7 rows.
    const y = new Uint16Array(10 * 7 * 32).map((_, k) => 0x3c00 + ((k * 29) % 0x0c00));
    writeFileSync(join(dir, 'in', 'sub', 'cube.npy'), Buffer.concat([npyHeader([10, 7, 32], 'float16'), Buffer.from(y.buffer)]));
    for (let i = 0; i < 3; i++) {
      const z = new Float32Array(4 * BIG.dim).map((_, k) => Math.cos(k + i));
      writeFileSync(join(dir, 'in', `small-${i}.npy`), Buffer.concat([npyHeader([4, BIG.dim]), Buffer.from(z.buffer)]));
    }
    mkdirSync(join(dir, 'ref', 'sub'), { recursive: true });
    for (const rel of ['big.npy', 'sub/cube.npy', 'small-0.npy', 'small-1.npy', 'small-2.npy']) {
      await normalizeFile(join(dir, 'in', rel), join(dir, 'ref', rel), { eps: 1e-5, threads: 1 });
    }
  }, 60_000);

  /** Checks that the outputs of `out` put back together (parts concatenated in order) are the reference, byte for byte. */
  const expectReassembled = (out: string, inputs = 5, inDir = join(dir, 'in'), refDir = join(dir, 'ref')) => {
    const recs = records(out);
    const byInput = new Map<string, DatasetRecord[]>();
    for (const r of recs) byInput.set(r.input, [...(byInput.get(r.input) ?? []), r]);
    expect(byInput.size).toBe(inputs);
    for (const [input, rs] of byInput) {
      const rel = input.slice(inDir.length + 1);
      const ref = npyParts(readFileSync(join(refDir, rel)));
      if (rs.length === 1 && !rs[0]!.part) {
        expect(readFileSync(join(out, rs[0]!.output)).equals(readFileSync(join(refDir, rel))), rel).toBe(true);
        continue;
      }
      rs.sort((a, b) => a.part!.index - b.part!.index);
      // The parts tile the first axis, in order, each named for its place.
      expect(rs.map((r) => r.part!.index)).toEqual(rs.map((_, k) => k));
      expect(rs[0]!.part!.start).toBe(0);
      expect(rs[rs.length - 1]!.part!.end).toBe(ref.shape[0]);
      for (let k = 1; k < rs.length; k++) expect(rs[k]!.part!.start).toBe(rs[k - 1]!.part!.end);
      const datas = rs.map((r) => {
        expect(r.output.endsWith(String(partName(rel.split('/').pop()!, r.part!.index, r.part!.count)))).toBe(true);
        const p = npyParts(readFileSync(join(out, r.output)));
        expect(p.shape).toEqual([r.part!.end - r.part!.start, ...ref.shape.slice(1)]);
        expect(r.shape).toEqual(p.shape);
        return p.data;
      });
      expect(Buffer.concat(datas).equals(ref.data), rel).toBe(true);
    }
  };

  it('3 shards: the big files in parts (row ranges of the first axis) spread over the shards; put back together, the single-process output', async () => {
    const out = join(dir, 'out3');
    const runs = await Promise.all([0, 1, 2].map((index) => normalizeDataset(join(dir, 'in'), out, { eps: 1e-5, threads: 1, shard: { index, count: 3 }, splitBytes: 0 })));
    // The big file is more than a shard's share: 3 parts, one per shard; the others whole.
    const outs = records(out).map((r) => r.output).sort();
    expect(outs).toEqual(['big.part-0-of-3.npy', 'big.part-1-of-3.npy', 'big.part-2-of-3.npy', 'small-0.npy', 'small-1.npy', 'small-2.npy', 'sub/cube.npy'].sort());
    expect(new Set(runs.map((s) => s.written))).not.toContain(0);
    expectReassembled(out);
    // Run again: every part is recorded complete.
    const again = await Promise.all([0, 1, 2].map((index) => normalizeDataset(join(dir, 'in'), out, { eps: 1e-5, shard: { index, count: 3 }, splitBytes: 0 })));
    expect(again.map((s) => s.written)).toEqual([0, 0, 0]);
    expect(again.reduce((a, s) => a + s.skipped, 0)).toBe(7);
  }, 60_000);

  it('more shards than files: a 3-D file is cut into blocks of its first axis; one shard, no splitting', async () => {
    const out = join(dir, 'out8');
    await Promise.all(Array.from({ length: 8 }, (_, index) => normalizeDataset(join(dir, 'in', 'sub'), out, { eps: 1e-5, threads: 1, shard: { index, count: 8 }, splitBytes: 0 })));
    expect(records(out).map((r) => r.output).sort()).toEqual(Array.from({ length: 8 }, (_, k) => `cube.part-${k}-of-8.npy`));
    expectReassembled(out, 1);
    const one = join(dir, 'out1');
    await normalizeDataset(join(dir, 'in'), one, { eps: 1e-5, splitBytes: 0 });
    expect(records(one).some((r) => r.part)).toBe(false);
    expectReassembled(one);
  }, 60_000);

  it('2 shard processes by the command, a 68 MiB file split by default, one shard killed with SIGKILL and run again: the single-process output', async () => {
    const inDir = join(dir, 'in-big');
    const refDir = join(dir, 'ref-big');
    mkdirSync(inDir, { recursive: true });
    mkdirSync(refDir, { recursive: true });
    const rows = 17408;
    const x = new Float32Array(rows * 1024).map((_, k) => Math.sin(k * 0.013) + (k % 5));
    writeFileSync(join(inDir, 'huge.npy'), Buffer.concat([npyHeader([rows, 1024]), Buffer.from(x.buffer)]));
    copyFileSync(join(dir, 'in', 'small-0.npy'), join(inDir, 'small-0.npy'));
    for (const rel of ['huge.npy', 'small-0.npy']) await normalizeFile(join(inDir, rel), join(refDir, rel), { eps: 1e-5 });
    const out = join(dir, 'out-big');
    const start = (i: number) =>
      spawn(process.execPath, [BIN, 'normalize', inDir, '--out-dir', out, '--eps', '1e-5', '--shard', `${i}/2`, '--threads', '1'], { stdio: 'ignore' });
    const exit = (p: ReturnType<typeof spawn>) => new Promise<number | null>((ok) => p.on('exit', (code) => ok(code)));
    const first = start(0);
    const second = start(1);
    setTimeout(() => first.kill('SIGKILL'), 150);
    await exit(first);
    expect(await exit(second)).toBe(0);
    expect(await exit(start(0))).toBe(0);
    expect(records(out).map((r) => r.output).sort()).toEqual(['huge.part-0-of-2.npy', 'huge.part-1-of-2.npy', 'small-0.npy']);
    expectReassembled(out, 2, inDir, refDir);
    expect(readdirSync(out).filter((f) => f.startsWith('.'))).toEqual([]);
    rmSync(inDir, { recursive: true });
    rmSync(refDir, { recursive: true });
    rmSync(out, { recursive: true });
  }, 120_000);

  it('by default only files over 64 MiB are split; splitBytes is checked', async () => {
    const out = join(dir, 'default');
    await Promise.all([0, 1].map((index) => normalizeDataset(join(dir, 'in'), out, { eps: 1e-5, threads: 1, shard: { index, count: 2 } })));
    expect(records(out).some((r) => r.part)).toBe(false);
    await expect(normalizeDataset(DATA, 'o', { splitBytes: -1 })).rejects.toThrow(/options\.splitBytes must be a number of bytes >= 0/);
    await expect(normalizeDataset(DATA, 'o', { splitBytes: '1' as never })).rejects.toThrow(TypeError);
  });

  it('normalizeFile with range: that block of the first axis, as its own file; bad ranges refused before anything is written', async () => {
    const ref = npyParts(readFileSync(join(dir, 'ref', 'big.npy')));
    const out = join(dir, 'range.npy');
    const s = await normalizeFile(join(dir, 'in', 'big.npy'), out, { eps: 1e-5, range: [250, 260] });
    expect(s).toMatchObject({ rows: 10, shape: [10, BIG.dim], bytes: 10 * BIG.dim * 4 });
    const got = npyParts(readFileSync(out));
    expect(got.shape).toEqual([10, BIG.dim]);
    expect(got.data.equals(ref.data.subarray(250 * BIG.dim * 4, 260 * BIG.dim * 4))).toBe(true);
    // Raw data: the range is rows.
    const raw = join(dir, 'big.f32');
    writeFileSync(raw, readFileSync(join(dir, 'in', 'big.npy')).subarray(128));
    const rawOut = join(dir, 'range.f32');
    await normalizeFile(raw, rawOut, { eps: 1e-5, dim: BIG.dim, format: 'raw', range: [999, 1000] });
    expect(readFileSync(rawOut).equals(ref.data.subarray(999 * BIG.dim * 4))).toBe(true);
    for (const [range, msg] of [
      [[5, 5], /options\.range must be \[start, end\], integers with 0 <= start < end, got/],
      [[-1, 2], /options\.range must be/],
      [[0, 1.5], /options\.range must be/],
      [[0], /options\.range must be/],
      [[990, 1001], /options\.range \[990, 1001\] must end by 1000, the length of the first axis of/],
    ] as const) {
      const bad = join(dir, 'bad-range.npy');
      await expect(normalizeFile(join(dir, 'in', 'big.npy'), bad, { range: range as never }), JSON.stringify(range)).rejects.toThrow(RangeError);
      await expect(normalizeFile(join(dir, 'in', 'big.npy'), bad, { range: range as never })).rejects.toThrow(msg);
      expect(existsSync(bad)).toBe(false);
    }
    expect(readdirSync(dir).filter((f) => f.startsWith('.'))).toEqual([]);
  });
});

describe('the shard plan', () => {
  const file = (rel: string, bytes: number) => ({ input: rel, rel, size: bytes, bytes, mtimeMs: 0 });

  it('shardOf: every file in exactly one shard, as the plain rule gives (largest first, to the lightest shard, ties to the lowest index)', () => {
    /** The rule, written the slow way. */
    const plain = (files: ReturnType<typeof file>[], count: number): string[][] => {
      const load = new Array<number>(count).fill(0);
      const got: string[][] = Array.from({ length: count }, () => []);
      for (const f of [...files].sort((a, b) => b.bytes - a.bytes || (a.rel < b.rel ? -1 : 1))) {
        let s = 0;
        for (let k = 1; k < count; k++) if (load[k]! < load[s]!) s = k;
        load[s]! += f.bytes;
        got[s]!.push(f.rel);
      }
      return got.map((g) => g.sort());
    };
    let seed = 7;
    const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    for (let t = 0; t < 60; t++) {
      const n = 1 + rand(200);
      const count = 1 + rand(t < 30 ? 9 : 64);
      // Few distinct sizes: many ties.
      const files = Array.from({ length: n }, (_, i) => file(`f${String(i).padStart(4, '0')}.npy`, 1 + rand(t % 2 ? 5 : 1e6)));
      const want = plain(files, count);
      for (let index = 0; index < count; index++) expect(shardOf(files, index, count).map((f) => f.rel), `${n} files, ${index}/${count}`).toEqual(want[index]);
    }
  });

  it('splitLarge: parts named in order; an input named like a part is a clash, refused', async () => {
    expect(partName('a/b.npy', 1, 4)).toBe('a/b.part-1-of-4.npy');
    expect(partName('a.d/raw', 0, 2)).toBe('a.d/raw.part-0-of-2');
    expect(partName('x.npy', 3, 12)).toBe('x.part-03-of-12.npy');
    const files = [file('x.npy', 1000), file('y.npy', 10)];
    const parts = await splitLarge(files, 2, 0, async () => 10);
    expect(parts.map((f) => [f.rel, f.part?.start, f.part?.end, f.bytes])).toEqual([
      ['x.part-0-of-2.npy', 0, 5, 500],
      ['x.part-1-of-2.npy', 5, 10, 500],
      ['y.npy', undefined, undefined, 10],
    ]);
    await expect(splitLarge([...files, file('x.part-1-of-2.npy', 1)], 2, 0, async () => 10)).rejects.toThrow(/would both be written to x\.part-1-of-2\.npy/);
    // Not split: under splitBytes, a first axis of 1, or one shard.
    expect((await splitLarge(files, 4, 1000, async () => 10)).some((f) => f.part)).toBe(false);
    expect((await splitLarge(files, 4, 0, async () => 1)).some((f) => f.part)).toBe(false);
    expect((await splitLarge(files, 1, 0, async () => 10)).some((f) => f.part)).toBe(false);
  });
});

function sha256(b: Buffer): string {
  return createHash('sha256').update(b).digest('hex');
}

/**
 * The three engine examples of docs/files.md, run here as each engine would run them: every
 * index of the Kubernetes Job (JOB_COMPLETION_INDEX), every task of the Slurm array
 * (SLURM_ARRAY_TASK_ID / _COUNT) and every job of the GNU parallel line, at once, with the
 * example's paths moved under a temporary folder and `npx rmsnorm-wasm` run as this build's
 * command. Together the shards must write the dataset exactly once.
 */
describe('the engine examples of docs/files.md', () => {
  const page = readFileSync(new URL('../docs/files.md', import.meta.url), 'utf8');
  const block = (lang: string, marker: string): string => {
    const found = [...page.matchAll(/^```(\w*)\n([\s\S]*?)^```/gm)].filter((m) => m[1] === lang && m[2]!.includes(marker));
    expect(found, `${lang} block with ${marker}`).toHaveLength(1);
    return found[0]![2]!;
  };
  const dir = join(root, 'engines');

  beforeAll(() => {
    for (const d of ['data/acts', 'shared/acts', 'acts']) {
      RELS.slice(0, 12).forEach((rel, i) => {
        const rows = 2 + i;
        const x = new Float32Array(rows * 64).map((_, k) => Math.cos(k + i));
        mkdirSync(dirname(join(dir, d, rel)), { recursive: true });
        writeFileSync(join(dir, d, rel), Buffer.concat([npyHeader([rows, 64]), Buffer.from(x.buffer)]));
      });
    }
    for (const d of ['data', 'shared']) writeFileSync(join(dir, d, 'w.npy'), Buffer.concat([npyHeader([64]), Buffer.from(new Float32Array(64).fill(1).buffer)]));
  });

  /** `command` as sh would run it here: the example's absolute paths under `dir`, this build's command. */
  const local = (command: string) =>
    command
      .replace(/\\\n\s*/g, ' ')
      .replace(/node_modules\/\.bin\/rmsnorm-wasm/, `"${process.execPath}" "${BIN}"`)
      .replace(/ \/(data|shared)\//g, ` ${dir}/$1/`);

  /** Runs `commands` (with their environments) at once; resolves when all have exited 0. */
  const all = (commands: { cmd: string; env: Record<string, string> }[]) =>
    Promise.all(
      commands.map(
        ({ cmd, env }) =>
          new Promise<void>((ok, fail) => {
            const p = spawn('sh', ['-c', cmd], { cwd: dir, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
            let err = '';
            p.stderr!.on('data', (d: Buffer) => (err += d.toString()));
            p.on('exit', (code) => (code === 0 ? ok() : fail(new Error(`${cmd}: exit ${code}\n${err}`))));
          }),
      ),
    );

  const expectCovered = (inDir: string, outDir: string, shards: number) => {
    const want = readdirSync(inDir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.npy')).sort();
    const recs = records(outDir);
    expect(recs.map((r) => r.output).sort()).toEqual(want);
    expect(readdirSync(outDir).filter((f) => f.startsWith('manifest'))).toHaveLength(shards);
  };

  it('the Kubernetes Indexed Job', async () => {
    const yaml = block('yaml', 'JOB_COMPLETION_INDEX');
    const n = Number(/completions: (\d+)/.exec(yaml)![1]);
    // The container's command and its arguments, as Kubernetes runs them: no shell, $(VAR) put in by Kubernetes.
    const command = JSON.parse(/command: (\[[^\]]*\])/.exec(yaml)![1]!) as string[];
    const args = JSON.parse(/args: (\[[^\]]*\])/.exec(yaml)![1]!.replace(/\s+/g, ' ')) as string[];
    expect(command).toEqual(['rmsnorm-wasm']);
    const argv = (i: number) => args.map((a) => a.replace('$(JOB_COMPLETION_INDEX)', String(i)).replace(/^\/data\//, `${dir}/data/`));
    await all(Array.from({ length: n }, (_, i) => ({ cmd: [`"${process.execPath}"`, `"${BIN}"`, ...argv(i).map((a) => `'${a}'`)].join(' '), env: {} })));
    expectCovered(join(dir, 'data', 'acts'), join(dir, 'data', 'normed'), n);
  }, 120_000);

  it('the Slurm job array', async () => {
    const script = block('bash', 'SLURM_ARRAY_TASK_ID');
    const [lo, hi] = /--array=(\d+)-(\d+)/.exec(script)!.slice(1).map(Number) as [number, number];
    const cmd = local(script.split('\n').filter((l) => !l.startsWith('#')).join('\n'));
    const n = hi - lo + 1;
    await all(Array.from({ length: n }, (_, i) => ({ cmd, env: { SLURM_ARRAY_TASK_ID: String(lo + i), SLURM_ARRAY_TASK_COUNT: String(n), SLURM_CPUS_PER_TASK: '1' } })));
    expectCovered(join(dir, 'shared', 'acts'), join(dir, 'shared', 'normed'), n);
  }, 120_000);

  it('the GNU parallel line', async () => {
    const line = block('bash', 'parallel -j').trim();
    const m = /^parallel -j\d+ (.*) ::: (.*)$/.exec(line)!;
    const values = m[2]!.split(' ');
    await all(values.map((v) => ({ cmd: local(m[1]!.replace('{}', v)), env: {} })));
    expectCovered(join(dir, 'acts'), join(dir, 'normed'), values.length);
  }, 120_000);
});
