/**
 * The batch tool's two ways through a file (docs/files.md, "Every thread moves its own rows")
 * give the same bytes: the pool's workers reading and writing rows at their positions, and the
 * calling thread front to back (an input under 32 MiB without `threads`) — for every format,
 * the arrays copied as they are, the zip members' CRC-32 (read back by Python's zipfile rules:
 * the central directory and the data descriptors), dtype conversions on the way in and out,
 * rstd files, --checksum; and the workers' way is the one taken. Its failures — an input cut
 * short under it, a full disk, a worker killed, an abort — name the file, leave no output and
 * no temporary, and the pool goes on working.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, type RmsNormPool } from '../dist/index.js';
import { poolHooks } from '../dist/pool/caller/hooks.js';
import { normalizeFile, npyHeader } from '../dist/node/index.js';

const FIX = new URL('./fixtures/formats/', import.meta.url).pathname;
const NPY = new URL('./fixtures/npy/', import.meta.url).pathname;
const root = mkdtempSync(join(tmpdir(), 'rmsnorm-positioned-'));
let pool: RmsNormPool;
beforeAll(async () => {
  pool = await createPool({ threads: 2 });
});
afterAll(async () => {
  await pool.destroy();
  rmSync(root, { recursive: true, force: true });
});

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const records = () => poolHooks(pool).taskRecords();

/** An .npy of `rows × dim` float32 values, and its path. */
function npyFile(name: string, rows: number, dim: number, dtype: 'float32' | 'float16' = 'float32'): string {
  const n = rows * dim;
  const data =
    dtype === 'float32'
      ? Buffer.from(new Float32Array(n).map((_, i) => Math.sin(i * 0.013) * (1 + (i % 7))).buffer)
      : Buffer.from(new Uint16Array(n).map((_, i) => 0x3000 + ((i * 37) % 0x0c00)).buffer);
  const p = join(root, name);
  writeFileSync(p, Buffer.concat([npyHeader(dim === 0 ? [rows] : [rows, dim], dtype), data]));
  return p;
}

/** Every member of a zip by its central directory: name, CRC-32 recorded there and in the data descriptor, and its data (stored). */
function zipMembers(b: Buffer): { name: string; crc: number; descriptorCrc: number; data: Buffer }[] {
  let eocd = b.length - 22;
  while (b.readUInt32LE(eocd) !== 0x06054b50) eocd--;
  const n = b.readUInt16LE(eocd + 10);
  let p = b.readUInt32LE(eocd + 16);
  const out = [];
  for (let k = 0; k < n; k++) {
    expect(b.readUInt32LE(p)).toBe(0x02014b50);
    const crc = b.readUInt32LE(p + 16);
    const size = b.readUInt32LE(p + 24);
    const nameLen = b.readUInt16LE(p + 28);
    const local = b.readUInt32LE(p + 42);
    const name = b.subarray(p + 46, p + 46 + nameLen).toString('utf8');
    p += 46 + nameLen + b.readUInt16LE(p + 30) + b.readUInt16LE(p + 32);
    const start = local + 30 + b.readUInt16LE(local + 26) + b.readUInt16LE(local + 28);
    const data = b.subarray(start, start + size);
    expect(b.readUInt32LE(start + size)).toBe(0x08074b50);
    out.push({ name, crc, descriptorCrc: b.readUInt32LE(start + size + 4), data });
  }
  return out;
}

describe('the same bytes both ways', () => {
  const cases: [string, () => string, Record<string, unknown>][] = [
    ['an .npy over many records with a weight, rstd, checksum', () => npyFile('many.npy', 3001, 16), { chunkBytes: 4_000, rstd: 'RSTD.npy', checksum: true, weight: join(NPY, 'weight.npy') }],
    ['float16 in, float32 out, partial', () => npyFile('h.npy', 777, 64, 'float16'), { outDtype: 'float32', partial: 0.5, chunkBytes: 10_000 }],
    ['float32 in, float16 out', () => npyFile('b.npy', 500, 48), { outDtype: 'float16', chunkBytes: 8_000, checksum: true }],
    ['float64 in (read as float32)', () => join(NPY, 'float64.npy'), { checksum: true }],
    ['an .npz of stored members: floats normalized, the others copied, CRC-32 from the records', () => join(FIX, 'savez.npz'), { chunkBytes: 256, rstd: 'RSTD.npz', checksum: true }],
    ['safetensors with copied tensors', () => join(FIX, 'tensors.safetensors'), { chunkBytes: 512, rstd: 'RSTD.safetensors', checksum: true }],
    ['raw bfloat16', () => {
      const p = join(root, 'r.bf16');
      writeFileSync(p, Buffer.from(new Uint16Array(40 * 80).map((_, i) => 0x3f00 + (i % 200)).buffer));
      return p;
    }, { format: 'raw', dim: 80, dtype: 'bfloat16', chunkBytes: 3000, checksum: true }],
  ];
  for (const [what, input, options] of cases) {
    it(what, async () => {
      const inp = input();
      const name = inp.split('/').pop()!;
      const o = (tag: string) => {
        const r = options.rstd as string | undefined;
        return { ...options, ...(r && { rstd: join(root, `${tag}-${r}`) }) };
      };
      const before = records();
      const a = await normalizeFile(inp, join(root, `pos-${name}`), { ...o('pos'), pool } as never);
      expect(records(), 'the workers moved the rows').toBeGreaterThan(before);
      const b = await normalizeFile(inp, join(root, `seq-${name}`), o('seq') as never);
      expect(b.threads).toBe(1);
      const pa = readFileSync(join(root, `pos-${name}`));
      expect(pa.equals(readFileSync(join(root, `seq-${name}`)))).toBe(true);
      if (options.rstd) expect(readFileSync(join(root, `pos-${options.rstd}`)).equals(readFileSync(join(root, `seq-${options.rstd}`)))).toBe(true);
      if (options.checksum) {
        expect(a.sha256).toBe(sha(pa));
        expect(b.sha256).toBe(a.sha256);
      }
      expect({ ...a, seconds: 0, gbPerS: 0, threads: 0, output: '' }).toEqual({ ...b, seconds: 0, gbPerS: 0, threads: 0, output: '' });
      if (name.endsWith('.npz')) {
        const members = zipMembers(pa);
        expect(members.length).toBeGreaterThan(1);
        for (const m of members) {
          expect(m.crc, m.name).toBe(crc32(m.data) >>> 0);
          expect(m.descriptorCrc, m.name).toBe(m.crc);
        }
        // NumPy reads it, where Python is here.
        const py = spawnSync('python3', ['-c', `import zipfile,sys; z=zipfile.ZipFile(sys.argv[1]); print(z.testzip())`, join(root, `pos-${name}`)], { encoding: 'utf8' });
        if (py.status === 0) expect(py.stdout.trim()).toBe('None');
      }
    });
  }

  it('a deflated .npz goes front to back (its members cannot be read at positions), with the same bytes', async () => {
    const before = records();
    const a = await normalizeFile(join(FIX, 'savez-compressed.npz'), join(root, 'pos-c.npz'), { pool, checksum: true });
    expect(records()).toBe(before);
    const b = await normalizeFile(join(FIX, 'savez-compressed.npz'), join(root, 'seq-c.npz'), { checksum: true });
    expect(readFileSync(join(root, 'pos-c.npz')).equals(readFileSync(join(root, 'seq-c.npz')))).toBe(true);
    expect(a.sha256).toBe(b.sha256);
  });
});

describe('failures on the workers', () => {
  const big = () => npyFile('big.npy', 4096, 1024); // 16 MiB
  const noTemps = (dir: string) => expect(readdirSync(dir).filter((n) => n.includes('.tmp-'))).toEqual([]);

  it('an input cut short while it is read: the file and the row named, no output, no temporary', async () => {
    // One worker, held before its first record until the input is cut.
    const one = await createPool({ threads: 1 });
    try {
      const inp = big();
      const out = join(root, 'cut-out.npy');
      poolHooks(one).hold(0);
      const run = normalizeFile(inp, out, { pool: one, chunkBytes: 256 << 10 });
      run.catch(() => {});
      const t0 = Date.now();
      while (!readdirSync(root).some((n) => n.startsWith('.cut-out.npy.tmp-')) && Date.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 5));
      while (!poolHooks(one).busy(0) && Date.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 5));
      truncateSync(inp, 4 << 20);
      poolHooks(one).release();
      await expect(run).rejects.toThrow(/big\.npy: the file ended early, at row 1\d\d\d of 4096 \(it shrank while it was read\)/);
      expect(existsSync(out)).toBe(false);
      noTemps(root);
    } finally {
      await one.destroy();
    }
  });

  it('a worker killed mid-file: the job fails naming it, no output; the pool replaces it and the next file is right', async () => {
    // One worker, held inside its first record, then killed there.
    const one = await createPool({ threads: 1 });
    try {
      const inp = big();
      const out = join(root, 'killed-out.npy');
      poolHooks(one).hold(0);
      const run = normalizeFile(inp, out, { pool: one, chunkBytes: 64 << 10 });
      run.catch(() => {});
      const t0 = Date.now();
      while (!poolHooks(one).busy(0) && Date.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 5));
      poolHooks(one).killWorker(0);
      await expect(run).rejects.toThrow(/worker 0 died during the job/);
      poolHooks(one).release();
      expect(existsSync(out)).toBe(false);
      noTemps(root);
      const s = await normalizeFile(inp, out, { pool: one, checksum: true });
      const ref = join(root, 'killed-ref.npy');
      await normalizeFile(inp, ref, {});
      expect(readFileSync(out).equals(readFileSync(ref))).toBe(true);
      expect(s.sha256).toBe(sha(readFileSync(ref)));
    } finally {
      await one.destroy();
    }
  });

  it('an abort mid-file: rejects with its reason, no output, no temporary', async () => {
    const inp = big();
    const out = join(root, 'aborted-out.npy');
    const ac = new AbortController();
    await expect(normalizeFile(inp, out, { pool, chunkBytes: 64 << 10, signal: ac.signal, onProgress: () => ac.abort(new Error('enough')) })).rejects.toThrow('enough');
    expect(existsSync(out)).toBe(false);
    noTemps(root);
  });

  it('a full disk (a 1 MiB tmpfs): ENOSPC named, no output, no temporary', async (ctx) => {
    const mnt = join(root, 'full');
    mkdirSync(mnt);
    const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mnt]).status === 0;
    if (!mounted && process.getuid?.() !== 0) ctx.skip(); // mounting needs root, which CI has
    expect(mounted).toBe(true);
    try {
      const out = join(mnt, 'out.npy');
      await expect(normalizeFile(big(), out, { pool })).rejects.toThrow(/no space left on the device writing .*out\.npy \(nothing was written in its place\)/);
      expect(readdirSync(mnt)).toEqual([]);
    } finally {
      spawnSync('umount', [mnt]);
    }
  });
});
