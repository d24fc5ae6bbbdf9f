/**
 * The batch tool against files and folders an attacker (or a messy shared cluster) hands it,
 * with real files, real links, real processes and signals. Each case asserts what must hold:
 * the trees outside the given folders byte-identical before and after (hashed), the exit code
 * and the file named, no abort (exit 134), no hang (a time cap), memory under a cap. A
 * generator of damaged headers (`.npy`, `.npz`, safetensors) adds cases of its own through the
 * API in this process: whatever the bytes, a call resolves or rejects with a NormalizeError,
 * TypeError or RangeError, never anything else, and never kills the process.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  closeSync, existsSync, ftruncateSync, lstatSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32, deflateRawSync } from 'node:zlib';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { createNormalizeStream, normalizeDataset, normalizeFile, NormalizeError, npyHeader } from '../dist/node/index.js';
import { cpuQuota } from '../ts/glue/platform.js';
import { ShardLock } from '../dist/node/dataset/lock.js';

const BIN = new URL('../bundle/node/bin.js', import.meta.url).pathname;
const root = mkdtempSync(join(tmpdir(), 'rmsnorm-hostile-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let n = 0;
/** A new empty folder for one case. */
function caseDir(): string {
  const d = join(root, `c${n++}`);
  mkdirSync(d);
  return d;
}

/** A float32 `.npy` of `rows` × `dim`. */
function npy(rows: number, dim: number): Buffer {
  const x = new Float32Array(rows * dim).map((_, k) => Math.sin(k * 0.37) + 0.25);
  return Buffer.concat([npyHeader([rows, dim]), Buffer.from(x.buffer)]);
}

/** Every path under `dir` (links as links, not followed) with a hash of what it is. */
function treeHash(dir: string): string {
  const h = createHash('sha256');
  const visit = (d: string): void => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      const st = lstatSync(p);
      h.update(`${p}\0${st.mode}\0`);
      if (st.isSymbolicLink()) h.update('link');
      else if (st.isDirectory()) visit(p);
      else if (st.isFile()) h.update(readFileSync(p));
    }
  };
  visit(dir);
  return h.digest('hex');
}

/** A module loaded before the command that prints its peak RSS (kB) as it exits: `maxrss=N`. */
const RSS_PROBE = join(root, 'rss-probe.mjs');
writeFileSync(RSS_PROBE, "import { writeSync } from 'node:fs';\nprocess.on('exit', () => writeSync(2, `maxrss=${process.resourceUsage().maxRSS}\\n`));\n");
/** The peak RSS in MB a run with the probe printed. */
const peakMb = (r: Ran): number => Number(/maxrss=(\d+)/.exec(r.stderr)?.[1] ?? NaN) / 1024;

interface Ran {
  code: number | null;
  signal: string | null;
  stderr: string;
  stdout: string;
  ms: number;
}

/** Runs the command to its end (killed past `timeoutMs`: a hang fails the case). */
function cli(args: string[], o: { cwd?: string; input?: Buffer; timeoutMs?: number; env?: NodeJS.ProcessEnv; rss?: boolean } = {}): Ran {
  const t0 = Date.now();
  const r = spawnSync(process.execPath, [...(o.rss ? ['--import', RSS_PROBE] : []), '--max-old-space-size=512', BIN, ...args], {
    cwd: o.cwd, input: o.input, encoding: 'utf8', timeout: o.timeoutMs ?? 60_000, killSignal: 'SIGKILL', env: { ...process.env, ...o.env },
  });
  return { code: r.status, signal: r.signal, stderr: r.stderr, stdout: r.stdout, ms: Date.now() - t0 };
}

/** A run that ended by itself, with `code`, in a message naming `named`. */
function expectExit(r: Ran, code: number, named?: string | RegExp): void {
  expect(r.signal, `not killed (a hang or a crash): ${r.stderr}`).toBe(null);
  expect(r.code, r.stderr).toBe(code);
  if (named !== undefined) expect(r.stderr).toMatch(named);
  expect(r.stderr).not.toMatch(/Assertion failed|FATAL|at \w+ \(|node:internal/);
}

// ---- crafted containers ----

interface Member {
  name: string;
  data: Buffer;
  deflate?: boolean;
  /** Overrides of the central directory entry. */
  cdName?: string;
  /** The name's bytes as both headers hold them (instead of `name`'s UTF-8), and the general-purpose flags. */
  nameBytes?: Buffer;
  flags?: number;
  crc?: number;
}

/** A zip of `members` (local headers, data, central directory), with what a case overrides. */
function zip(members: Member[], o: { extraEntries?: (entry: (cdName: Buffer) => Buffer) => Buffer[] } = {}): Buffer {
  const parts: Buffer[] = [];
  const cd: Buffer[] = [];
  let at = 0;
  for (const m of members) {
    const body = m.deflate ? deflateRawSync(m.data) : m.data;
    const crc = m.crc ?? crc32(m.data);
    const name = m.nameBytes ?? Buffer.from(m.name);
    const h = Buffer.alloc(30);
    h.writeUInt32LE(0x04034b50, 0);
    h.writeUInt16LE(20, 4);
    h.writeUInt16LE(m.flags ?? 0, 6);
    h.writeUInt16LE(m.deflate ? 8 : 0, 8);
    h.writeUInt32LE(crc >>> 0, 14);
    h.writeUInt32LE(body.length, 18);
    h.writeUInt32LE(m.data.length, 22);
    h.writeUInt16LE(name.length, 26);
    const local = at;
    parts.push(h, name, body);
    at += 30 + name.length + body.length;
    const entry = (cdName: Buffer) => {
      const c = Buffer.alloc(46);
      c.writeUInt32LE(0x02014b50, 0);
      c.writeUInt16LE(20, 4);
      c.writeUInt16LE(20, 6);
      c.writeUInt16LE(m.flags ?? 0, 8);
      c.writeUInt16LE(m.deflate ? 8 : 0, 10);
      c.writeUInt32LE(crc >>> 0, 16);
      c.writeUInt32LE(body.length, 20);
      c.writeUInt32LE(m.data.length, 24);
      c.writeUInt16LE(cdName.length, 28);
      c.writeUInt32LE(local, 42);
      return Buffer.concat([c, cdName]);
    };
    cd.push(entry(m.nameBytes ?? Buffer.from(m.cdName ?? m.name)));
    for (const e of o.extraEntries?.(entry) ?? []) cd.push(e);
  }
  const dir = Buffer.concat(cd);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(cd.length, 8);
  end.writeUInt16LE(cd.length, 10);
  end.writeUInt32LE(dir.length, 12);
  end.writeUInt32LE(at, 16);
  return Buffer.concat([...parts, dir, end]);
}

/** A safetensors file of one float32 tensor with the header text `json` may rewrite. */
function safetensors(rows: number, dim: number, edit: (json: string) => string = (j) => j): Buffer {
  const data = npy(rows, dim).subarray(npyHeader([rows, dim]).length);
  const json = edit(JSON.stringify({ x: { dtype: 'F32', shape: [rows, dim], data_offsets: [0, data.length] } }));
  const text = Buffer.from(json.padEnd(Math.ceil(json.length / 8) * 8, ' '));
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(text.length));
  return Buffer.concat([len, text, data]);
}

describe('nothing outside the given folders is written or read', () => {
  it('links planted in the output directory are refused, never written through (outputs, subfolders, manifest, lock)', () => {
    const d = caseDir();
    mkdirSync(join(d, 'clean/sub'), { recursive: true });
    writeFileSync(join(d, 'clean/a.npy'), npy(4, 8));
    writeFileSync(join(d, 'clean/sub/c.npy'), npy(4, 8));
    mkdirSync(join(d, 'outside/vdir'), { recursive: true });
    writeFileSync(join(d, 'outside/victim'), 'precious');
    writeFileSync(join(d, 'outside/vm'), 'manifest victim');
    mkdirSync(join(d, 'P'));
    symlinkSync('../outside/victim', join(d, 'P/a.npy'));
    symlinkSync('../outside/vdir', join(d, 'P/sub'));
    const before = treeHash(join(d, 'outside'));
    const r = cli(['normalize', 'clean', '--out-dir', 'P', '--keep-going'], { cwd: d });
    expectExit(r, 1, /P\/a\.npy.*symbolic link/);
    expect(r.stderr).toMatch(/P\/sub.*symbolic link/);
    expect(treeHash(join(d, 'outside'))).toBe(before);
    // The manifest and the lock as links: refused before any output is written.
    for (const [name, rm] of [['manifest.jsonl', true], ['rmsnorm.lock', true]] as const) {
      const q = join(d, `Q-${name}`);
      mkdirSync(q);
      symlinkSync('../outside/vm', join(q, name));
      const r2 = cli(['normalize', 'clean', '--out-dir', `Q-${name}`], { cwd: d, timeoutMs: 20_000 });
      expectExit(r2, 1, new RegExp(`${name.replace('.', '\\.')}.*symbolic link`));
      expect(treeHash(join(d, 'outside'))).toBe(before);
      expect(existsSync(join(q, 'a.npy'))).toBe(!rm);
    }
  });

  it('the API refuses the same links (normalizeDataset)', async () => {
    const d = caseDir();
    mkdirSync(join(d, 'in'));
    writeFileSync(join(d, 'in/a.npy'), npy(2, 8));
    writeFileSync(join(d, 'victim'), 'x');
    mkdirSync(join(d, 'out'));
    symlinkSync('../victim', join(d, 'out/a.npy'));
    const s = await normalizeDataset(join(d, 'in'), join(d, 'out'), { keepGoing: true, threads: 1 });
    expect(s.failed.map((f) => f.error).join()).toMatch(/symbolic link/);
    expect(readFileSync(join(d, 'victim'), 'utf8')).toBe('x');
  });

  it('a FIFO or a device where an output goes is refused, not written through (no hang)', () => {
    const d = caseDir();
    mkdirSync(join(d, 'in'));
    writeFileSync(join(d, 'in/a.npy'), npy(2, 8));
    mkdirSync(join(d, 'out'));
    expect(spawnSync('mkfifo', [join(d, 'out/a.npy')]).status).toBe(0);
    const r = cli(['normalize', 'in', '--out-dir', 'out'], { cwd: d, timeoutMs: 20_000 });
    expectExit(r, 1, /a\.npy.*FIFO/);
  });

  it('a FIFO among the inputs is skipped in a folder and refused when named, without blocking on it', () => {
    const d = caseDir();
    mkdirSync(join(d, 'in'));
    writeFileSync(join(d, 'in/a.npy'), npy(2, 8));
    expect(spawnSync('mkfifo', [join(d, 'in/f.npy')]).status).toBe(0);
    symlinkSync('/dev/zero', join(d, 'in/zero.npy'));
    const r = cli(['normalize', 'in', '--out-dir', 'o'], { cwd: d, timeoutMs: 20_000 });
    expectExit(r, 0);
    expect(readdirSync(join(d, 'o')).sort()).toEqual(['a.npy', 'manifest.jsonl']);
    const named = cli(['normalize', 'in/f.npy', 'in/a.npy', '--out-dir', 'o2'], { cwd: d, timeoutMs: 20_000 });
    expectExit(named, 1, /in\/f\.npy is not a regular file/);
    expect(existsSync(join(d, 'o2'))).toBe(false);
  });

  it('a link to a directory out of the input tree is skipped, with a warning naming it; file links are followed', () => {
    const d = caseDir();
    mkdirSync(join(d, 'top/in/real'), { recursive: true });
    writeFileSync(join(d, 'top/secret.npy'), npy(2, 8));
    writeFileSync(join(d, 'top/in/real/a.npy'), npy(2, 8));
    symlinkSync('..', join(d, 'top/in/up'));
    symlinkSync('/', join(d, 'top/in/rootdir'));
    symlinkSync('real', join(d, 'top/in/inside'));
    symlinkSync('../secret.npy', join(d, 'top/in/blob.npy')); // a file link: followed (a Hugging Face cache)
    const r = cli(['normalize', 'top/in', '--out-dir', 'o'], { cwd: d });
    expectExit(r, 0, /up.*outside/);
    expect(r.stderr).toMatch(/rootdir.*outside/);
    expect(existsSync(join(d, 'o/up'))).toBe(false);
    expect(existsSync(join(d, 'o/rootdir'))).toBe(false);
    expect(existsSync(join(d, 'o/inside/a.npy')) || existsSync(join(d, 'o/real/a.npy'))).toBe(true);
    expect(existsSync(join(d, 'o/blob.npy'))).toBe(true);
  });
});

describe('sizes read from a file are checked before use: no abort, no unbounded memory', () => {
  it('an .npy v2 header length in [2^31, 2^32) is a data error (exit 1), not an abort', () => {
    const d = caseDir();
    const b = Buffer.concat([Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 2, 0]), Buffer.alloc(4), Buffer.alloc(8000, 0x20)]);
    b.writeUInt32LE(3 << 30 >>> 0, 8);
    writeFileSync(join(d, 'x.npy'), b);
    expectExit(cli(['normalize', 'x.npy', 'y.npy'], { cwd: d }), 1, /x\.npy.*header/);
    expect(existsSync(join(d, 'y.npy'))).toBe(false);
    // The same file in a dataset run with --keep-going: the run ends, no temporary or lock left.
    mkdirSync(join(d, 'data'));
    writeFileSync(join(d, 'data/x.npy'), b);
    writeFileSync(join(d, 'data/ok.npy'), npy(2, 8));
    expectExit(cli(['normalize', 'data', '--out-dir', 'o', '--keep-going'], { cwd: d }), 1, /x\.npy/);
    expect(readdirSync(join(d, 'o')).sort()).toEqual(['manifest.jsonl', 'ok.npy']);
  });

  it('the same header on standard input is refused at its length, not buffered', () => {
    const d = caseDir();
    const b = Buffer.concat([Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 2, 0]), Buffer.alloc(4), Buffer.alloc(1 << 20, 0x20)]);
    b.writeUInt32LE(1 << 30, 8);
    expectExit(cli(['normalize', '-', 'y.npy'], { cwd: d, input: b }), 1, /header of \d+ bytes/);
  });

  it('a ZIP64 directory size, a stored member size and a --weight length past 2^31 are data errors', () => {
    const d = caseDir();
    // ZIP64 end record claiming a 3 GiB central directory.
    const z = zip([{ name: 'x.npy', data: npy(2, 8) }]);
    const eocd = z.subarray(z.length - 22);
    const z64 = Buffer.alloc(56 + 20);
    z64.writeUInt32LE(0x06064b50, 0);
    z64.writeBigUInt64LE(44n, 4);
    z64.writeBigUInt64LE(1n, 24);
    z64.writeBigUInt64LE(1n, 32);
    z64.writeBigUInt64LE(3n << 30n, 40);
    z64.writeBigUInt64LE(BigInt(eocd.readUInt32LE(16)), 48);
    z64.writeUInt32LE(0x07064b50, 56);
    z64.writeBigUInt64LE(BigInt(z.length - 22), 64);
    z64.writeUInt32LE(1, 72);
    const e2 = Buffer.from(eocd);
    e2.writeUInt32LE(0xffffffff, 12);
    writeFileSync(join(d, 'a.npz'), Buffer.concat([z.subarray(0, z.length - 22), z64, e2]));
    expectExit(cli(['normalize', 'a.npz', 'b.npz'], { cwd: d }), 1, /a\.npz.*(damaged|central directory)/);
    // A stored member said to be 3 GiB.
    const s = zip([{ name: 'x.npy', data: npy(2, 8) }]);
    const cdAt = s.readUInt32LE(s.length - 22 + 16);
    s.writeUInt32LE(3 << 30 >>> 0, cdAt + 20);
    s.writeUInt32LE(3 << 30 >>> 0, cdAt + 24);
    writeFileSync(join(d, 'c.npz'), s);
    expectExit(cli(['normalize', 'c.npz', 'b.npz'], { cwd: d }), 1, /c\.npz.*damaged/);
    // A raw weight of 3 GiB (a sparse file).
    writeFileSync(join(d, 'x.npy'), npy(2, 8));
    const fd = openSync(join(d, 'w.bin'), 'w');
    ftruncateSync(fd, 3 * 2 ** 30);
    closeSync(fd);
    expectExit(cli(['normalize', 'x.npy', 'y.npy', '--weight', 'w.bin'], { cwd: d }), 1, /w\.bin.*at most/);
  });

  it('safetensors: integer offsets and shapes only, the header cap, the header against the file', () => {
    const d = caseDir();
    writeFileSync(join(d, 'f.safetensors'), safetensors(2, 8, (j) => j.replace(/"data_offsets":\[0,(\d+)\]/, '"data_offsets":[0.0,$1.0]')));
    expectExit(cli(['normalize', 'f.safetensors', 'o.safetensors'], { cwd: d }), 1, /f\.safetensors.*integers/);
    const big = Buffer.concat([Buffer.alloc(8), Buffer.from('{"x": {"dtype": "F32"}}')]);
    big.writeBigUInt64LE(200_000_000n);
    writeFileSync(join(d, 'h.safetensors'), big);
    expectExit(cli(['normalize', 'h.safetensors', 'o.safetensors'], { cwd: d }), 1, /h\.safetensors.*at most/);
  });

  it('names read from a container round-trip exactly or are refused; safetensors numbers are checked as the tokens they are', () => {
    const d = caseDir();
    const data = npy(4, 8);
    // A member flagged UTF-8 whose name is not: refused, as Python's zipfile refuses it.
    writeFileSync(join(d, 'bad-utf8.npz'), zip([{ name: '', nameBytes: Buffer.from([0x78, 0xff, 0xfe, 0x2e, 0x6e, 0x70, 0x79]), flags: 0x800, data }]));
    expectExit(cli(['normalize', 'bad-utf8.npz', 'o.npz'], { cwd: d }), 1, /bad-utf8\.npz: a member whose name is flagged UTF-8 is not/);
    // The same bytes without the flag are CP437, and round-trip: written back under the same name.
    writeFileSync(join(d, 'cp437.npz'), zip([{ name: '', nameBytes: Buffer.from([0x78, 0x82, 0x2e, 0x6e, 0x70, 0x79]), data }]));
    const r = cli(['normalize', 'cp437.npz', 'o.npz', '--json'], { cwd: d });
    expectExit(r, 0);
    expect(JSON.parse(r.stdout).arrays.map((a: { name: string }) => a.name)).toEqual(['xé']);
    for (const [file, edit, why] of [
      ['surrogate.safetensors', (j: string) => j.replace('"x"', '"\\ud800"'), /not well-formed Unicode/],
      ['twice.safetensors', (j: string) => j.replace('{"x":', '{"x":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},"x":'), /the key "x" appears twice/],
      ['escaped.safetensors', (j: string) => j.replace('"shape":[4,8]', '"sh\\u0061pe":[4.0,8]'), /the number 4\.0/],
      ['negative.safetensors', (j: string) => j.replace('"shape":[4,8]', '"shape":[-4,8]'), /the number -4/],
      ['exponent.safetensors', (j: string) => j.replace('"shape":[4,8]', '"shape":[4e0,8]'), /the number 4e0/],
    ] as const) {
      writeFileSync(join(d, file), safetensors(4, 8, edit));
      expectExit(cli(['normalize', file, 'o.safetensors'], { cwd: d }), 1, why);
    }
  });

  it('zip: overlapping members, a name the local header contradicts, and a bad CRC-32 (stored and deflated) are refused', () => {
    const d = caseDir();
    const data = npy(64, 256); // 64 KiB: well past a deflate block
    // 2,000 directory entries over one member's data.
    const bomb = zip([{ name: 'x.npy', data }], {
      extraEntries: (entry) => Array.from({ length: 2000 }, (_, i) => entry(Buffer.from(`y${i}.npy`))),
    });
    writeFileSync(join(d, 'bomb.npz'), bomb);
    const r = cli(['normalize', 'bomb.npz', 'o.npz'], { cwd: d });
    expectExit(r, 1, /bomb\.npz.*overlaps/);
    expect(existsSync(join(d, 'o.npz'))).toBe(false);
    writeFileSync(join(d, 'name.npz'), zip([{ name: 'x.npy', data, cdName: 'z.npy' }]));
    expectExit(cli(['normalize', 'name.npz', 'o.npz'], { cwd: d }), 1, /name\.npz.*local header/);
    for (const deflate of [false, true]) {
      const bad = Buffer.from(data);
      bad[bad.length - 100] = bad[bad.length - 100]! ^ 1; // past the first 4 KB
      writeFileSync(join(d, 'crc.npz'), zip([{ name: 'x.npy', data: bad, deflate, crc: crc32(data) }]));
      expectExit(cli(['normalize', 'crc.npz', 'o.npz'], { cwd: d }), 1, /crc\.npz.*CRC-32/);
      expect(existsSync(join(d, 'o.npz'))).toBe(false);
    }
  });

  it('headers of many tensors or much metadata: time and memory bounded as documented (13 bytes per byte of header, 2.5 kB per tensor)', () => {
    const d = caseDir();
    const make = (path: string, tensors: number, meta: number) => {
      const entries: string[] = [];
      if (meta) entries.push(`"__metadata__":{${Array.from({ length: meta }, (_, i) => `"k${i}":"${'v'.repeat(1000)}"`).join(',')}}`);
      for (let i = 0; i < tensors; i++) entries.push(`"t${i}":{"dtype":"F32","shape":[1,1],"data_offsets":[${i * 4},${i * 4 + 4}]}`);
      const json = `{${entries.join(',')}}`;
      const text = Buffer.from(json.padEnd(Math.ceil(json.length / 8) * 8, ' '));
      const len = Buffer.alloc(8);
      len.writeBigUInt64LE(BigInt(text.length));
      writeFileSync(path, Buffer.concat([len, text, Buffer.alloc(tensors * 4)]));
      return text.length / 2 ** 20;
    };
    writeFileSync(join(d, 'x.npy'), npy(2, 8));
    const base = peakMb(cli(['normalize', 'x.npy', 'y.npy'], { cwd: d, rss: true }));
    for (const [name, tensors, meta] of [['many', 100_000, 0], ['meta', 1, 20_000]] as const) {
      const headerMb = make(join(d, `${name}.safetensors`), tensors, meta);
      const r = cli(['normalize', `${name}.safetensors`, `${name}-out.safetensors`], { cwd: d, rss: true, timeoutMs: 60_000 });
      expectExit(r, 0);
      expect(r.ms, name).toBeLessThan(30_000);
      expect(peakMb(r), `${name}: ${headerMb.toFixed(1)} MB of header`).toBeLessThan(base + 13 * headerMb + (2.5 * tensors) / 1024 + 64);
    }
  }, 120_000);

  it('short and absurd .npy headers are named for what they are', () => {
    const d = caseDir();
    writeFileSync(join(d, 's.npy'), Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, 0]));
    expectExit(cli(['normalize', 's.npy', 'o.npy'], { cwd: d }), 1, /s\.npy.*truncated/);
    const dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (18446744073709551616, 0, 16), }";
    const h = Buffer.alloc(128, 0x20);
    Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]).copy(h);
    h.writeUInt16LE(118, 8);
    Buffer.from(dict).copy(h, 10);
    h[127] = 0x0a;
    writeFileSync(join(d, 'z.npy'), h);
    const r = cli(['normalize', 'z.npy', 'o.npy'], { cwd: d });
    expectExit(r, 1, /z\.npy/);
    expect(r.stderr).toMatch(/an axis of 18446744073709551616, more than an array can have/);
  });
});

describe('rows of any size go through every mode', () => {
  it('a dataset of rows of 4 MiB, and of 16 MiB, finishes (it hung)', () => {
    const d = caseDir();
    mkdirSync(join(d, 'a'));
    writeFileSync(join(d, 'a/x.npy'), npy(9, 1 << 20));
    mkdirSync(join(d, 'b'));
    writeFileSync(join(d, 'b/x.npy'), npy(1, 4_200_000));
    writeFileSync(join(d, 'b/y.npy'), npy(1, 4_200_000));
    for (const dir of ['a', 'b']) {
      const r = cli(['normalize', dir, '--out-dir', `o${dir}`], { cwd: d, timeoutMs: 60_000 });
      expectExit(r, 0);
    }
    expect(readFileSync(join(d, 'ob/x.npy')).equals(readFileSync(join(d, 'ob/y.npy')))).toBe(true);
  });

  it('the longest row taken (256 MiB, a sparse file) goes through one file, a dataset, a pipe and the API; one longer is refused by name', async () => {
    const d = caseDir();
    mkdirSync(join(d, 'in'));
    const dim = 2 ** 26;
    const head = npyHeader([1, dim]);
    const make = (path: string, n: number) => {
      writeFileSync(path, npyHeader([1, n]));
      const fd = openSync(path, 'r+');
      ftruncateSync(fd, npyHeader([1, n]).length + n * 4);
      closeSync(fd);
    };
    make(join(d, 'in/big.npy'), dim);
    expectExit(cli(['normalize', 'in/big.npy', 'one.npy'], { cwd: d }), 0);
    expectExit(cli(['normalize', 'in', '--out-dir', 'o'], { cwd: d }), 0);
    expectExit(cli(['normalize', '-', 'piped.npy'], { cwd: d, input: readFileSync(join(d, 'in/big.npy')) }), 0);
    const s = await normalizeFile(join(d, 'in/big.npy'), join(d, 'api.npy'), { threads: 2 });
    expect(s.rows).toBe(1);
    // Zeros in, zeros out (eps keeps rstd finite): every output is the header and zeros.
    for (const f of ['one.npy', 'o/big.npy', 'piped.npy', 'api.npy']) {
      const b = readFileSync(join(d, f));
      expect(b.length, f).toBe(head.length + dim * 4);
      expect(b.subarray(head.length).every((v) => v === 0), f).toBe(true);
      rmSync(join(d, f));
    }
    make(join(d, 'longer.npy'), dim * 2);
    const r = cli(['normalize', 'longer.npy', 'x.npy'], { cwd: d });
    expectExit(r, 1, /longer\.npy: its rows have 134217728 elements .* at most 268435456 bytes/);
    expect(r.stderr).not.toMatch(/rmsnorm-wasm: .*rmsnorm-wasm:/);
  }, 120_000);
});

describe('options are checked once, before anything is made', () => {
  it.each([
    [['--eps', '-1'], /--eps/],
    [['--partial', '2'], /--partial/],
    [['--threads', '0'], /--threads/],
    [['--quant-scale', '2'], /--quant-scale|--out-dtype/],
    [['--offset', '1'], /--offset \(1\) needs a weight/],
    [['--out-dtype', 'bfloat16'], /--out-dtype bfloat16 cannot be written in a NumPy \.npy file, as data\/a\.npy and 2 more inputs would be/],
  ])('%j: exit 2, one message in the command\'s words, no folder', (flags, re) => {
    const d = caseDir();
    mkdirSync(join(d, 'data'));
    for (const f of ['a', 'b', 'c']) writeFileSync(join(d, `data/${f}.npy`), npy(2, 8));
    const r = cli(['normalize', 'data', '--out-dir', 'o', '--keep-going', ...flags], { cwd: d });
    expectExit(r, 2, re);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).not.toMatch(/normalize(File|Dataset)|options\./);
    expect(existsSync(join(d, 'o'))).toBe(false);
  });

  it('a file-dependent mistake is a data error naming the file (exit 1)', () => {
    const d = caseDir();
    writeFileSync(join(d, 'x.npy'), npy(2, 8));
    writeFileSync(join(d, 'w.npy'), npy(1, 4));
    expectExit(cli(['normalize', 'x.npy', 'y.npy', '--weight', 'w.npy'], { cwd: d }), 1, /x\.npy/);
  });

  it('createNormalizeStream with a bad dtype is a TypeError naming it', () => {
    expect(() => createNormalizeStream({ dim: 4, dtype: 'x' as never })).toThrow(TypeError);
    expect(() => createNormalizeStream({ dim: 4, dtype: 'x' as never })).toThrow(/dtype/);
  });
});

describe('a stop is a stop', () => {
  it('SIGTERM during a --checksum dataset run: exit 143, no temporary, no lock', async () => {
    const d = caseDir();
    mkdirSync(join(d, 'data'));
    for (let i = 0; i < 40; i++) writeFileSync(join(d, `data/f${i}.npy`), npy(1024, 1024));
    const p = spawn(process.execPath, [BIN, 'normalize', 'data', '--out-dir', 'o', '--checksum', '--threads', '1'], { cwd: d, stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    p.stderr.on('data', (b: Buffer) => (err += b));
    const done = new Promise<{ code: number | null; signal: string | null }>((ok) => p.on('exit', (code, signal) => ok({ code, signal })));
    // Stopped once outputs are being written.
    const t0 = Date.now();
    while (!(existsSync(join(d, 'o')) && readdirSync(join(d, 'o')).some((f) => f.includes('.tmp-'))) && Date.now() - t0 < 30_000) await new Promise((r) => setTimeout(r, 2));
    const tStop = Date.now();
    p.kill('SIGTERM');
    const r = await done;
    expect(r.code === 143 || r.signal === 'SIGTERM', `${JSON.stringify(r)} ${err}`).toBe(true);
    expect(Date.now() - tStop).toBeLessThan(500 + 250);
    expect(err).toMatch(/stopped by SIGTERM/);
    expect(err).not.toMatch(/EBADF|Error:/);
    expect(readdirSync(join(d, 'o')).filter((f) => f.includes('.tmp-') || f.endsWith('.lock'))).toEqual([]);
  }, 60_000);
});

describe('a stop is a stop with every flag and format', () => {
  const d = mkdtempSync(join(root, 'stops-'));
  const made = new Set<string>();
  /** A folder of 40 files of 4 MiB in `format`, made once. */
  const data = (format: 'npy' | 'npz' | 'safetensors'): string => {
    const dir = join(d, format);
    if (made.has(format)) return dir;
    mkdirSync(dir);
    for (let i = 0; i < 40; i++) {
      const body = format === 'npy' ? npy(1024, 1024) : format === 'npz' ? zip([{ name: 'x.npy', data: npy(1024, 1024) }]) : safetensors(1024, 1024);
      writeFileSync(join(dir, `f${i}.${format}`), body);
    }
    made.add(format);
    return dir;
  };
  it.each([
    ['npy', ['--verbose']],
    ['npy', ['--keep-going', '--no-fsync']],
    ['npy', ['--out-dtype', 'int8']],
    ['npz', ['--checksum']],
    ['safetensors', ['--out-dtype', 'int8', '--verbose']],
  ] as const)('%s %j: SIGTERM mid-run ends it within the grace, no temporary, no lock', async (format, flags) => {
    const out = join(d, `out-${format}-${flags.join('')}`);
    const p = spawn(process.execPath, [BIN, 'normalize', data(format), '--out-dir', out, '--threads', '1', ...flags], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    p.stderr.on('data', (b: Buffer) => (err += b));
    const done = new Promise<{ code: number | null; signal: string | null }>((ok) => p.on('exit', (code, signal) => ok({ code, signal })));
    const t0 = Date.now();
    while (!(existsSync(out) && readdirSync(out).some((f) => f.includes('.tmp-'))) && Date.now() - t0 < 30_000) await new Promise((r) => setTimeout(r, 2));
    const tStop = Date.now();
    p.kill('SIGTERM');
    const r = await done;
    expect(r.code === 143 || r.signal === 'SIGTERM', `${JSON.stringify(r)} ${err}`).toBe(true);
    expect(Date.now() - tStop).toBeLessThan(500 + 250);
    expect(err).toMatch(/stopped by SIGTERM/);
    expect(err).not.toMatch(/EBADF|Error:|at \w+ \(/);
    expect(readdirSync(out).filter((f) => f.includes('.tmp-') || f.endsWith('.lock'))).toEqual([]);
  }, 60_000);
});

describe('a stop does not wait for reads in flight', () => {
  it('SIGTERM while a read from a stalled FIFO is in flight: exit 143 within half a second (after the signal), no temporary', async () => {
    const d = caseDir();
    const whole = npy(64, 1024);
    writeFileSync(join(d, 'part.npy'), whole.subarray(0, whole.length / 2)); // a header and half the rows, then nothing
    expect(spawnSync('mkfifo', [join(d, 'in.fifo')]).status).toBe(0);
    const writer = spawn('sh', ['-c', 'cat part.npy; exec sleep 60'], { cwd: d, stdio: ['ignore', openSync(join(d, 'in.fifo'), 'r+'), 'ignore'] });
    const p = spawn(process.execPath, [BIN, 'normalize', 'in.fifo', 'out.npy'], { cwd: d, stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    p.stderr.on('data', (b: Buffer) => (err += b));
    const done = new Promise<{ code: number | null; signal: string | null }>((ok) => p.on('exit', (code, signal) => ok({ code, signal })));
    const t0 = Date.now();
    while (!readdirSync(d).some((f) => f.includes('.tmp-')) && Date.now() - t0 < 20_000) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setTimeout(r, 100)); // the read of the missing rows is in flight
    const tStop = Date.now();
    p.kill('SIGTERM');
    const r = await done;
    const took = Date.now() - tStop;
    writer.kill('SIGKILL');
    // Ended by SIGTERM itself (a shell's $? and Kubernetes report 143), not by a later SIGKILL.
    expect(r.code === 143 || r.signal === 'SIGTERM', `${JSON.stringify(r)} ${err}`).toBe(true);
    expect(took).toBeLessThan(500 + 250); // the grace, and the process's own exit on a busy machine
    expect(err).toMatch(/stopped by SIGTERM; no output was written/);
    expect(readdirSync(d).filter((f) => f.includes('.tmp-') || f === 'out.npy')).toEqual([]);
  }, 60_000);
});

describe('logs and threads for schedulers', () => {
  it('without a terminal, a progress line at an interval (files, bytes, rate, ETA); --progress none prints none', () => {
    const d = caseDir();
    mkdirSync(join(d, 'data'));
    for (let i = 0; i < 12; i++) writeFileSync(join(d, `data/f${i}.npy`), npy(256, 1024));
    const r = cli(['normalize', 'data', '--out-dir', 'o', '--progress-interval', '0.001', '--threads', '1'], { cwd: d });
    expectExit(r, 0);
    const lines = r.stderr.split('\n').filter((l) => l.startsWith('rmsnorm-wasm: progress'));
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.at(-1)).toMatch(/progress after .*: \d+\/12 files, .* rows, [\d.]+%, .*B\/s, ETA \d+ s$/);
    const q = cli(['normalize', 'data', '--out-dir', 'o2', '--progress', 'none', '--progress-interval', '0.001'], { cwd: d });
    expect(q.stderr).toBe('');
    expectExit(cli(['normalize', 'data', '--out-dir', 'o3', '--progress', 'sometimes'], { cwd: d }), 2, /--progress must be/);
  });

  it('--help lists the exit codes and the signals', () => {
    const h = cli(['--help']);
    expect(h.stdout).toMatch(/Exit codes: 0 done; 1 .*; 2 .*; 75 .*;\s130, 143 or 129 stopped by SIGINT, SIGTERM or SIGHUP/s);
  });

  it('the default thread count follows a cgroup CPU quota (v2 and v1) and SLURM_CPUS_PER_TASK', () => {
    const files = (m: Record<string, string>) => (p: string) => {
      if (p in m) return m[p]!;
      throw new Error('ENOENT');
    };
    expect(cpuQuota(files({ '/proc/self/cgroup': '0::/\n', '/sys/fs/cgroup/cpu.max': '50000 100000\n' }))).toBe(1);
    expect(cpuQuota(files({ '/proc/self/cgroup': '0::/kubepods/pod1/c1\n', '/sys/fs/cgroup/kubepods/pod1/cpu.max': '400000 100000', '/sys/fs/cgroup/kubepods/pod1/c1/cpu.max': 'max 100000' }))).toBe(4);
    expect(cpuQuota(files({ '/proc/self/cgroup': '4:cpu,cpuacct:/docker/abc\n', '/sys/fs/cgroup/cpu/docker/abc/cpu.cfs_quota_us': '150000', '/sys/fs/cgroup/cpu/docker/abc/cpu.cfs_period_us': '100000' }))).toBe(2);
    expect(cpuQuota(files({ '/proc/self/cgroup': '0::/\n', '/sys/fs/cgroup/cpu.max': 'max 100000' }))).toBe(Infinity);
    expect(cpuQuota(files({}))).toBe(Infinity);
    // Through the command: SLURM_CPUS_PER_TASK=1 gives one thread.
    const d = caseDir();
    writeFileSync(join(d, 'x.npy'), npy(8192, 1024)); // 32 MiB: a pool is started
    const r = cli(['normalize', 'x.npy', 'y.npy', '--json'], { cwd: d, env: { SLURM_CPUS_PER_TASK: '1' } });
    expectExit(r, 0);
    expect(JSON.parse(r.stdout).threads).toBe(1);
  });

  it('a run that waited for another run\'s lock counts its rate from when it got the lock', async () => {
    const d = caseDir();
    mkdirSync(join(d, 'data'));
    writeFileSync(join(d, 'data/a.npy'), npy(2, 8));
    mkdirSync(join(d, 'o'));
    const held = await ShardLock.acquire(join(d, 'o'), 0, 1, { waitS: 0, staleS: 60 });
    const p = spawn(process.execPath, [BIN, 'normalize', 'data', '--out-dir', 'o', '--json'], { cwd: d, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (b: Buffer) => (out += b));
    p.stderr.on('data', (b: Buffer) => (err += b));
    const done = new Promise<number | null>((ok) => p.on('exit', (code) => ok(code)));
    const t0 = Date.now();
    while (!/waiting for process/.test(err) && Date.now() - t0 < 20_000) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 1500));
    await held.release();
    expect(await done, err).toBe(0);
    expect(err).toMatch(/waiting for process \d+ on .*; it is taken over as soon as its process is gone/);
    expect((JSON.parse(out) as { seconds: number }).seconds).toBeLessThan(1.5);
  }, 40_000);

  it('a retried pod on the same node (same boot, another PID namespace) takes a dead lock over within a few heartbeats, saying why', () => {
    const d = caseDir();
    mkdirSync(join(d, 'data'));
    writeFileSync(join(d, 'data/a.npy'), npy(2, 8));
    mkdirSync(join(d, 'o'));
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'latin1').trim();
    const owner = {
      pid: 1, host: 'pod-0-abcde', machine: `${boot}/pid:[1]`, started: 5, nonce: 'deadbeef', shard: '0/1', since: '2026-01-01T00:00:00.000Z', beat: 3, boot, beatAt: Date.now() - 60_000,
    };
    writeFileSync(join(d, 'o/rmsnorm.lock'), JSON.stringify(owner).padEnd(1023, ' ') + '\n');
    const r = cli(['normalize', 'data', '--out-dir', 'o'], { cwd: d, timeoutMs: 30_000 });
    expectExit(r, 0, /took over the lock of process 1 on pod-0-abcde .*presumed dead: its heartbeat stopped/);
    expect(r.ms).toBeLessThan(20_000);
  });
});

describe('a generator of damaged headers', () => {
  const d = mkdtempSync(join(root, 'gen-'));
  /** Runs normalizeFile on `bytes`: it resolves, or rejects with one of the documented errors. */
  async function survives(bytes: Uint8Array, name: string): Promise<void> {
    const input = join(d, name);
    writeFileSync(input, bytes);
    try {
      await normalizeFile(input, join(d, `out-${name}`), { threads: 1 });
    } catch (e) {
      if (!(e instanceof NormalizeError || e instanceof TypeError || e instanceof RangeError)) throw e;
      expect((e as Error).message.length).toBeGreaterThan(0);
    }
  }
  /** `base` with bytes at random positions of its first `within` set to random values. */
  const mutated = (base: Buffer, within: number) =>
    fc.array(fc.tuple(fc.nat({ max: within - 1 }), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 6 }).map((edits) => {
      const b = Buffer.from(base);
      for (const [i, v] of edits) b[i] = v;
      return b;
    });

  it('.npy headers: 150 mutations of the prefix and the dict', async () => {
    const base = npy(3, 16);
    await fc.assert(fc.asyncProperty(mutated(base, 128), (b) => survives(b, 'g.npy')), { numRuns: 150, seed: 7 });
  }, 60_000);

  it('.npz directories and local headers: 150 mutations', async () => {
    const base = zip([{ name: 'a.npy', data: npy(3, 16) }, { name: 'b.npy', data: npy(2, 16), deflate: true }]);
    const cdAt = base.readUInt32LE(base.length - 22 + 16);
    // Mutations in the central directory, the end record, and the first local header.
    const inTail = fc.array(fc.tuple(fc.nat({ max: base.length - cdAt - 1 }), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 6 }).map((edits) => {
      const b = Buffer.from(base);
      for (const [i, v] of edits) b[cdAt + i] = v;
      return b;
    });
    await fc.assert(fc.asyncProperty(fc.oneof(inTail, mutated(base, 40)), (b) => survives(b, 'g.npz')), { numRuns: 150, seed: 11 });
  }, 60_000);

  it('safetensors headers: 150 mutations of the length and the JSON', async () => {
    const base = safetensors(3, 16);
    await fc.assert(fc.asyncProperty(mutated(base, 8 + 80), (b) => survives(b, 'g.safetensors')), { numRuns: 150, seed: 13 });
  }, 60_000);

  it('safetensors headers with JSON values swapped for odd ones: 100 cases', async () => {
    const odd = fc.constantFrom('-1', '1e300', '0.5', '"8"', 'null', '[]', '{}', '9007199254740993', '4294967296', '2147483648', '[1,2,3]');
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('shape0', 'shape1', 'off0', 'off1', 'dtype'), odd, async (slot, v) => {
        const b = safetensors(3, 16, (j) => {
          const o = JSON.parse(j) as { x: { dtype: unknown; shape: unknown[]; data_offsets: unknown[] } };
          const x = o.x;
          const val = JSON.parse(v) as unknown;
          if (slot === 'shape0') x.shape[0] = val;
          if (slot === 'shape1') x.shape[1] = val;
          if (slot === 'off0') x.data_offsets[0] = val;
          if (slot === 'off1') x.data_offsets[1] = val;
          if (slot === 'dtype') x.dtype = val;
          return JSON.stringify(o);
        });
        await survives(b, 'v.safetensors');
      }),
      { numRuns: 100, seed: 17 },
    );
  }, 60_000);
});
