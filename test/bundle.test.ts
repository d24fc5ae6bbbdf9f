// What users import is the bundle (bundle/, scripts/bundle.mjs), not the modules tsc writes to
// dist/ that the other tests reach inside. It must give the modules' bits, load the pool's code
// only when a pool is made, share one state between its two entries (a pool made from the main
// entry serves the Node entry's files), and find the wasm builds and the worker scripts from
// its chunks.
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import * as modules from '../dist/index.js';
import { firstBitDiff, testRows, testWeight } from '../shared/reference.js';

const BUNDLE = new URL('../bundle/', import.meta.url);
const main = (await import(new URL('index.js', BUNDLE).href)) as typeof modules;
const node = (await import(new URL('node/index.js', BUNDLE).href)) as typeof import('../dist/node/index.js');
const dir = mkdtempSync(join(tmpdir(), 'rmsnorm-bundle-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The relative imports of a bundle file (static, or dynamic with `dynamic`). */
function importsOf(file: string, dynamic: boolean): string[] {
  const text = readFileSync(new URL(file, BUNDLE), 'utf8');
  const re = dynamic ? /import\("(\.{1,2}\/[^"]+)"\)/g : /(?:from|import)\s*"(\.{1,2}\/[^"]+)"/g;
  return [...text.matchAll(re)].map((m) => m[1]!);
}

describe('the bundle', () => {
  it('gives the bits of the modules, sync and pool, forward and backward', async () => {
    await Promise.all([main.init(), modules.init()]);
    const x = testRows(64, 896, 1);
    const w = testWeight(896, 2);
    const dy = testRows(64, 896, 3);
    expect(firstBitDiff(main.rmsNorm(x, w), modules.rmsNorm(x, w))).toBe(-1);
    const a = main.rmsNormBackward(dy, x, w);
    const b = modules.rmsNormBackward(dy, x, w);
    expect([firstBitDiff(a.dx, b.dx), firstBitDiff(a.dweight!, b.dweight!)]).toEqual([-1, -1]);
    const pool = await main.createPool({ threads: 2 });
    try {
      const big = testRows(4096, 256, 4);
      const wb = testWeight(256, 5);
      expect(firstBitDiff(await pool.rmsNorm(big, wb), modules.rmsNorm(big, wb))).toBe(-1);
    } finally {
      await pool.destroy();
    }
  });

  it('the main entry loads the pool\'s code only when a pool is made', () => {
    const seen = new Set<string>();
    const walk = (f: string) => {
      if (seen.has(f)) return;
      seen.add(f);
      for (const i of importsOf(f, false)) walk(new URL(i, new URL(f, BUNDLE)).href.slice(BUNDLE.href.length));
    };
    walk('index.js');
    const lazy = [...seen].flatMap((f) => importsOf(f, true)).map((i) => i.replace(/^\.\//, ''));
    expect(lazy.filter((f) => f.startsWith('create-'))).toHaveLength(1);
    expect([...seen].filter((f) => lazy.includes(f))).toEqual([]); // not also loaded at once
    // and the code it brings (the chunk and what it imports that the entry does not: the pool's
    // classes, shared with the Node entry, are chunks of their own) is the pool's
    const create = lazy.find((f) => f.startsWith('create-'))!;
    const brought = [create, ...importsOf(create, false).map((i) => i.replace(/^\.\//, ''))].filter((f) => !seen.has(f));
    expect(brought.some((f) => readFileSync(new URL(f, BUNDLE), 'utf8').includes('rmsnorm-wasm pool'))).toBe(true);
    expect(brought.some((f) => readFileSync(new URL(f, BUNDLE), 'utf8').includes('Pool = class'))).toBe(true);
  });

  it('one state for both entries: a pool made from the main entry runs the Node entry\'s file', async () => {
    const rows = 64;
    const dim = 128;
    const x = testRows(rows, dim, 6);
    const header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${rows}, ${dim}), }`;
    const pad = 64 - ((10 + header.length + 1) % 64);
    const head = Buffer.concat([Buffer.from([0x93]), Buffer.from('NUMPY'), Buffer.from([1, 0]), Buffer.from(Uint16Array.of(header.length + pad + 1).buffer), Buffer.from(header + ' '.repeat(pad) + '\n')]);
    writeFileSync(join(dir, 'in.npy'), Buffer.concat([head, Buffer.from(x.buffer)]));
    const pool = await main.createPool({ threads: 2 });
    try {
      const r = await node.normalizeFile(join(dir, 'in.npy'), join(dir, 'out.npy'), { pool });
      expect(r.threads).toBe(pool.threads);
    } finally {
      await pool.destroy();
    }
    const out = readFileSync(join(dir, 'out.npy'));
    const y = new Float32Array(out.buffer.slice(out.byteOffset + head.length, out.byteOffset + out.length));
    expect(firstBitDiff(y, modules.rmsNorm(x, null, { dim }))).toBe(-1);
  });

  it('has no file beside its entries, chunks and maps', () => {
    const files = readdirSync(BUNDLE, { recursive: true, withFileTypes: true }).filter((d) => d.isFile()).map((d) => join(d.parentPath, d.name).slice(BUNDLE.pathname.length));
    expect(files.filter((f) => !/^(?:(?:node|pool\/worker)\/)?[\w-]+\.js(?:\.map)?$/.test(f))).toEqual([]);
  });
});
