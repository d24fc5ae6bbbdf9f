/**
 * The batch tool on the files users have: outputs that are devices, FIFOs, standard output or
 * symbolic links (never replaced by a regular file); inputs that are pipes, FIFOs or `-`
 * (streamed, never read as nothing); links inside input directories (followed, each real file
 * once, loops skipped with a warning, the Hugging Face cache's layout); names that are not
 * UTF-8, that hold a newline, or that are 250 bytes long; and the messages: a directory or a
 * read-only file system named as such, shapes printed exactly, counts in words.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { normalizeDataset, normalizeFile, NormalizeError, npyHeader } from '../dist/node/index.js';

const BIN = new URL('../bundle/node/bin.js', import.meta.url).pathname;
const root = mkdtempSync(join(tmpdir(), 'rmsnorm-paths-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const isRoot = process.getuid?.() === 0;

const X = join(root, 'x.npy');
const REF = join(root, 'x-ref.npy');
const RAW = join(root, 'x.f32');
const RAW_REF = join(root, 'x-ref.f32');
beforeAll(async () => {
  const x = new Float32Array(300 * 128).map((_, k) => Math.sin(k * 0.7) * (1 + (k % 5)));
  writeFileSync(X, Buffer.concat([npyHeader([300, 128]), Buffer.from(x.buffer)]));
  writeFileSync(RAW, Buffer.from(x.buffer));
  await normalizeFile(X, REF);
  await normalizeFile(RAW, RAW_REF, { format: 'raw', dim: 128 });
});

function cli(...args: string[]) {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
const sh = (cmd: string) => spawnSync('sh', ['-c', cmd], { encoding: 'buffer', timeout: 60_000 });
const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
const NODE_BIN = `${q(process.execPath)} ${q(BIN)}`;

describe('outputs that are not regular files', () => {
  // A copy of /dev/null, never the system's own: a regression would replace that with a file.
  it('a character device (a copy of /dev/null, made with mknod) is written through and stays a device', (ctx) => {
    if (!isRoot) ctx.skip();
    const dev = join(root, 'null-copy');
    expect(spawnSync('mknod', [dev, 'c', '1', '3']).status).toBe(0);
    const r = cli('normalize', X, dev);
    expect(r.code, r.stderr).toBe(0);
    expect(lstatSync(dev).isCharacterDevice()).toBe(true);
    expect(readFileSync(dev).length).toBe(0); // still /dev/null
  });

  it('a FIFO: its reader gets every byte; it stays a FIFO', async () => {
    const fifo = join(root, 'out.fifo');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    const reader = spawn('cat', [fifo]);
    const chunks: Buffer[] = [];
    reader.stdout.on('data', (d: Buffer) => chunks.push(d));
    const done = new Promise((ok) => reader.on('exit', ok));
    const r = spawn(process.execPath, [BIN, 'normalize', X, fifo], { stdio: 'ignore' });
    expect(await new Promise((ok) => r.on('exit', ok))).toBe(0);
    await done;
    expect(Buffer.concat(chunks).equals(readFileSync(REF))).toBe(true);
    expect(lstatSync(fifo).isFIFO()).toBe(true);
  });

  it('-, /proc/self/fd/1 and a link to it (as /dev/stdout is) write the data to standard output (the summary to stderr)', () => {
    // A link of our own, as the system's /dev/stdout is one: a regression must not replace the system's.
    const link = join(root, 'stdout-link');
    symlinkSync('/proc/self/fd/1', link);
    for (const out of ['-', '/proc/self/fd/1', link]) {
      const r = sh(`${NODE_BIN} normalize ${q(X)} ${out}`);
      expect(r.status, out).toBe(0);
      expect(r.stdout.equals(readFileSync(REF)), out).toBe(true);
      expect(r.stderr.toString()).toMatch(/^normalized 300 rows × 128 /);
    }
    // Redirected to a file: the file gets the data.
    const f = join(root, 'redirected.npy');
    expect(sh(`${NODE_BIN} normalize ${q(X)} ${q(link)} --quiet > ${q(f)}`).status).toBe(0);
    expect(readFileSync(f).equals(readFileSync(REF))).toBe(true);
  });

  it('a symbolic link is followed: its target is replaced atomically, the link stays a link (a dangling one too)', () => {
    const d = join(root, 'links');
    mkdirSync(join(d, 'real'), { recursive: true });
    writeFileSync(join(d, 'real', 'target.npy'), 'old');
    symlinkSync('real/target.npy', join(d, 'link.npy'));
    expect(cli('normalize', X, join(d, 'link.npy')).code).toBe(0);
    expect(lstatSync(join(d, 'link.npy')).isSymbolicLink()).toBe(true);
    expect(readlinkSync(join(d, 'link.npy'))).toBe('real/target.npy');
    expect(readFileSync(join(d, 'real', 'target.npy')).equals(readFileSync(REF))).toBe(true);
    symlinkSync('real/new.npy', join(d, 'dangling.npy'));
    expect(cli('normalize', X, join(d, 'dangling.npy')).code).toBe(0);
    expect(lstatSync(join(d, 'dangling.npy')).isSymbolicLink()).toBe(true);
    expect(readFileSync(join(d, 'real', 'new.npy')).equals(readFileSync(REF))).toBe(true);
    expect(readdirSync(join(d, 'real')).sort()).toEqual(['new.npy', 'target.npy']);
  });

  it('--in-place on a symbolic link replaces its target; the link stays', () => {
    const d = join(root, 'inplace');
    mkdirSync(d);
    writeFileSync(join(d, 'data.npy'), readFileSync(X));
    symlinkSync('data.npy', join(d, 'alias.npy'));
    expect(cli('normalize', join(d, 'alias.npy'), join(d, 'alias.npy')).code).toBe(1);
    expect(cli('normalize', join(d, 'alias.npy'), join(d, 'alias.npy'), '--in-place').code).toBe(0);
    expect(lstatSync(join(d, 'alias.npy')).isSymbolicLink()).toBe(true);
    expect(readFileSync(join(d, 'data.npy')).equals(readFileSync(REF))).toBe(true);
  });

  it('a directory OUT (or --rstd) is refused before the input is even opened; the output left as it was', () => {
    const fifoIn = join(root, 'nobody-writes.fifo');
    expect(spawnSync('mkfifo', [fifoIn]).status).toBe(0);
    // Opening a FIFO nobody writes would block: the refusal comes first.
    const r = cli('normalize', fifoIn, root);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^rmsnorm-wasm: error: the output .* is a directory: give a file name\n$/);
    const out = join(root, 'kept.npy');
    writeFileSync(out, 'previous');
    const r2 = cli('normalize', X, out, '--rstd', root);
    expect(r2.code).toBe(1);
    expect(r2.stderr).toMatch(/--rstd .* is a directory/);
    expect(readFileSync(out, 'utf8')).toBe('previous');
  });
});

describe('inputs that cannot be seeked', () => {
  it('a pipe as /dev/stdin or -: raw and .npy streamed, the same bytes as from the file', () => {
    for (const inp of ['-', '/dev/stdin']) {
      let r = sh(`cat ${q(RAW)} | ${NODE_BIN} normalize ${inp} - --format raw --dim 128`);
      expect(r.status, r.stderr.toString()).toBe(0);
      expect(r.stdout.equals(readFileSync(RAW_REF)), inp).toBe(true);
      expect(r.stderr.toString()).toMatch(/^normalized 300 rows × 128/);
      r = sh(`cat ${q(X)} | ${NODE_BIN} normalize ${inp} -`);
      expect(r.stdout.equals(readFileSync(REF)), inp).toBe(true);
    }
  });

  it('a FIFO input is streamed; a stream that ends mid-row or early is an error, with no output', () => {
    const f = join(root, 'in.fifo');
    expect(spawnSync('mkfifo', [f]).status).toBe(0);
    const out = join(root, 'from-fifo.f32');
    let r = sh(`cat ${q(RAW)} > ${q(f)} & ${NODE_BIN} normalize ${q(f)} ${q(out)} --format raw --dim 128`);
    expect(r.status, r.stderr.toString()).toBe(0);
    expect(readFileSync(out).equals(readFileSync(RAW_REF))).toBe(true);
    r = sh(`head -c 1000 ${q(RAW)} | ${NODE_BIN} normalize - ${q(join(root, 'cut.f32'))} --format raw --dim 128`);
    expect(r.status).toBe(1);
    expect(r.stderr.toString()).toMatch(/the input ended mid-row \(488 bytes of a 512-byte row\)/);
    r = sh(`head -c 10000 ${q(X)} | ${NODE_BIN} normalize - ${q(join(root, 'cut.npy'))}`);
    expect(r.status).toBe(1);
    expect(r.stderr.toString()).toMatch(/ended early/);
    expect(existsSync(join(root, 'cut.f32')) || existsSync(join(root, 'cut.npy'))).toBe(false);
  });

  it('an empty pipe is not "0 rows, exit 0" for a .npy; for raw it is an empty stream, said so', () => {
    let r = sh(`printf '' | ${NODE_BIN} normalize - ${q(join(root, 'e.npy'))}`);
    expect(r.status).toBe(1);
    expect(r.stderr.toString()).toMatch(/not a NumPy \.npy, an \.npz or a safetensors file \(it is empty\)/);
    r = sh(`printf '' | ${NODE_BIN} normalize - ${q(join(root, 'e.f32'))} --format raw --dim 4`);
    expect(r.status).toBe(0);
    expect(r.stdout.toString()).toMatch(/^normalized 0 rows × 4 /);
  });
});

describe('every input found', () => {
  it('the Hugging Face cache layout (snapshots of links into blobs): every file, named by its link; a loop and a second link warned of', async () => {
    const cache = join(root, 'hf');
    mkdirSync(join(cache, 'blobs'), { recursive: true });
    mkdirSync(join(cache, 'snapshots', 'abc123', 'sub'), { recursive: true });
    writeFileSync(join(cache, 'blobs', '9f1e'), readFileSync(X));
    writeFileSync(join(cache, 'blobs', '77aa'), readFileSync(X));
    symlinkSync('../../blobs/9f1e', join(cache, 'snapshots', 'abc123', 'acts.npy'));
    symlinkSync('../../../blobs/77aa', join(cache, 'snapshots', 'abc123', 'sub', 'more.npy'));
    symlinkSync('../../blobs/9f1e', join(cache, 'snapshots', 'abc123', 'again.npy')); // the same file again
    symlinkSync('..', join(cache, 'snapshots', 'abc123', 'sub', 'up')); // a loop
    const out = join(root, 'hf-out');
    const warnings: string[] = [];
    const s = await normalizeDataset(join(cache, 'snapshots'), out, { onWarning: (w) => warnings.push(w) });
    expect(s.written).toBe(2);
    expect(readdirSync(join(out, 'abc123')).sort()).toEqual(['acts.npy', 'sub']);
    expect(readFileSync(join(out, 'abc123', 'sub', 'more.npy')).equals(readFileSync(REF))).toBe(true);
    expect(warnings.some((w) => /again\.npy: it is the same file as .*acts\.npy, normalized once/.test(w))).toBe(true);
    expect(warnings.some((w) => /sub\/up: a link back to a directory above it \(a loop\)/.test(w))).toBe(true);
    expect(s.warnings).toEqual(warnings);
    const r = cli('normalize', join(cache, 'snapshots'), '--out-dir', join(root, 'hf-nofollow'), '--no-follow-symlinks');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/warning: skipped the symbolic link .*acts\.npy \(links are not followed\)/);
    expect(r.stderr).toMatch(/the directory has no input files \(files named \*\.npy, \*\.npz or \*\.safetensors, not hidden, in it or below\)/);
    expect(existsSync(join(root, 'hf-nofollow'))).toBe(false);
  });

  it('a run refused for its weight leaves no folder and no manifest; a row too long for memory is a data error naming the file and the limit', async () => {
    const d = join(root, 'refused');
    for (const sub of ['a/b', 'c/d/e', 'f']) {
      mkdirSync(join(d, 'in', sub), { recursive: true });
      writeFileSync(join(d, 'in', sub, 'x.npy'), readFileSync(X));
    }
    writeFileSync(join(d, 'w3.npy'), Buffer.concat([npyHeader([3]), Buffer.alloc(12)]));
    const r = cli('normalize', join(d, 'in'), '--out-dir', join(d, 'out'), '--weight', join(d, 'w3.npy'));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/the weight has 3 elements, but the rows of .*x\.npy have \d+ \(no file written\)/);
    expect(existsSync(join(d, 'out')), 'no output directory').toBe(false);
    // One row of 2^31 float32 (a sparse file): exit 1, not a usage error, before any output.
    const huge = join(d, 'huge.npy');
    writeFileSync(huge, npyHeader([1, 2 ** 31]));
    sh(`truncate -s ${statSync(huge).size + 2 ** 33} ${q(huge)}`);
    const h = cli('normalize', huge, join(d, 'huge-out.npy'));
    expect(h.code).toBe(1);
    expect(h.stderr).toMatch(/huge\.npy: its rows have 2147483648 elements \(8589934592 bytes of float32\); a row is normalized whole in memory, which takes rows of at most 268435456 bytes \(67108864 elements\)/);
    expect(h.stderr).not.toMatch(/--help|allocF32/);
    expect(existsSync(join(d, 'huge-out.npy'))).toBe(false);
  });

  it('a name that is not UTF-8 is read and written under the same bytes, recorded, and skipped on the rerun', async () => {
    const d = join(root, 'bytes');
    mkdirSync(join(d, 'in'), { recursive: true });
    const name = Buffer.concat([Buffer.from(join(d, 'in') + '/caf'), Buffer.from([0xe9]), Buffer.from('.npy')]);
    writeFileSync(name, readFileSync(X));
    writeFileSync(join(d, 'in', 'plain.npy'), readFileSync(X));
    const r = cli('normalize', join(d, 'in'), '--out-dir', join(d, 'out'), '--json');
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).written).toBe(2);
    const outName = Buffer.concat([Buffer.from(join(d, 'out') + '/caf'), Buffer.from([0xe9]), Buffer.from('.npy')]);
    expect(readFileSync(outName).equals(readFileSync(REF))).toBe(true);
    const rec = readFileSync(join(d, 'out', 'manifest.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
    expect(rec.find((x) => x.outputBase64)).toMatchObject({ output: '"caf\\xe9.npy"', outputBase64: Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x2e, 0x6e, 0x70, 0x79]).toString('base64') });
    expect(cli('normalize', join(d, 'in'), '--out-dir', join(d, 'out')).stdout).toMatch(/^nothing to do: 2 of 2 files/);
  });

  it('a name of 250 bytes (legal up to 255) is written, alone and in a dataset; a part name past 255 is refused up front', async () => {
    const d = join(root, 'long');
    mkdirSync(join(d, 'in'), { recursive: true });
    const long = `${'n'.repeat(246)}.npy`;
    writeFileSync(join(d, 'in', long), readFileSync(X));
    await normalizeFile(join(d, 'in', long), join(d, long));
    expect(readFileSync(join(d, long)).equals(readFileSync(REF))).toBe(true);
    const s = await normalizeDataset(join(d, 'in'), join(d, 'out'));
    expect(s.written).toBe(1);
    await expect(normalizeDataset(join(d, 'in'), join(d, 'out2'), { shard: { index: 0, count: 2 }, splitBytes: 0 })).rejects.toThrow(/would have a name longer than 255 bytes/);
  });

  it('an --out-dir inside the input folder, named through a link, is never read as input', () => {
    const d = join(root, 'nested');
    mkdirSync(join(d, 'data'), { recursive: true });
    writeFileSync(join(d, 'data', 'a.npy'), readFileSync(X));
    symlinkSync('data/normed', join(d, 'out-link'));
    for (let i = 0; i < 2; i++) {
      const r = cli('normalize', join(d, 'data'), '--out-dir', join(d, 'out-link'), '--json');
      expect(r.code, r.stderr).toBe(0);
    }
    expect(readdirSync(join(d, 'data', 'normed')).sort()).toEqual(['a.npy', 'manifest.jsonl']);
  });
});

describe('messages', () => {
  it('a directory named x.npy, a name with a newline, a read-only file system: named exactly, one line', (ctx) => {
    const d = join(root, 'msg');
    mkdirSync(join(d, 'dir.npy'), { recursive: true });
    let r = cli('normalize', join(d, 'dir.npy'), join(d, 'o.npy'));
    expect(r.stderr).toMatch(/^rmsnorm-wasm: error: cannot read .*dir\.npy: it is a directory\n$/);
    const nl = join(d, 'two\nlines.npy');
    writeFileSync(nl, 'not npy at all');
    r = cli('normalize', nl, join(d, 'o.npy'));
    expect(r.stderr).toMatch(/^rmsnorm-wasm: error: ".*two\\nlines\.npy": not a NumPy/);
    expect(r.stderr.split('\n')).toHaveLength(2);
    if (!isRoot) ctx.skip();
    const ro = join(d, 'ro');
    mkdirSync(ro);
    expect(spawnSync('mount', ['-t', 'tmpfs', '-o', 'ro,size=1m', 'tmpfs', ro]).status).toBe(0);
    try {
      r = cli('normalize', X, '--out-dir', join(ro, 'sub'));
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/cannot make the output directory .*ro\/sub: the file system is read-only \(EROFS\)/);
      r = cli('normalize', X, join(ro, 'o.npy'));
      expect(r.stderr).toMatch(/cannot write .*ro\/o\.npy .*: the file system is read-only \(EROFS\)/);
    } finally {
      spawnSync('umount', [ro]);
    }
  });

  it('shapes exactly: (0, 2^29) is an empty output; (0, 2^40) names its row length; 2^62 printed as is', async () => {
    const d = join(root, 'shapes');
    mkdirSync(d);
    const file = (name: string, shape: string) => {
      const dict = `{'descr': '<f4', 'fortran_order': False, 'shape': ${shape}, }`.padEnd(117, ' ') + '\n';
      writeFileSync(join(d, name), Buffer.concat([Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, dict.length, 0]), Buffer.from(dict, 'latin1')]));
    };
    file('empty.npy', '(0, 536870912)');
    const s = await normalizeFile(join(d, 'empty.npy'), join(d, 'empty-out.npy'));
    expect(s).toMatchObject({ rows: 0, dim: 2 ** 29, shape: [0, 2 ** 29] });
    expect(readFileSync(join(d, 'empty-out.npy')).length).toBe(128);
    file('wide.npy', '(0, 1099511627776)');
    const e = await normalizeFile(join(d, 'wide.npy'), join(d, 'o.npy')).catch((x: Error) => x);
    expect(e).toBeInstanceOf(NormalizeError);
    expect((e as Error).message).toMatch(/wide\.npy: its rows have 1099511627776 elements; the kernels take rows of at most 4294967295/);
    file('huge.npy', '(4611686018427387904, 2)');
    const r = cli('normalize', join(d, 'huge.npy'), join(d, 'o.npy'));
    expect(r.stderr).toMatch(/the header's shape \(4611686018427387904, 2\) has an axis of 4611686018427387904, more than an array can have/);
  });

  it('counts in words: "1 row", "1 file"; a bad option value exits 2', () => {
    const one = join(root, 'one.npy');
    writeFileSync(one, Buffer.concat([npyHeader([1, 4]), Buffer.from(new Float32Array([1, 2, 3, 4]).buffer)]));
    expect(cli('normalize', one, join(root, 'one-out.npy')).stdout).toMatch(/^normalized 1 row × 4 /);
    expect(cli('normalize', one, '--out-dir', join(root, 'one-dir')).stdout).toMatch(/^normalized 1 file of 1 \(1 row, /);
    const r = cli('normalize', one, join(root, 'one-out.npy'), '--eps', '-1');
    expect(r.code).toBe(2);
  });
});
