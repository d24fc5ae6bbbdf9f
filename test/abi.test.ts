// The wasm boundary's codes are defined once, in crate/src/abi.rs: ts/generated/abi.ts must be what
// scripts/gen-abi.mjs writes from it, every status code a kernel can return must reach the
// caller as its meaning (not "unknown status"), and every storage type code must run.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { ABI_HASH, DTYPE_FACTS, DTYPE_MASK, DTYPE_TEXT, Dtype, Gate, GATE_TEXT, LLAMA, LLAMA_W, STATUS_TEXT, Status } from '../dist/generated/abi.js';
import { checkAbi, loadWasm, type KernelExports } from '../dist/glue/load.js';
import { RmsNorm } from '../dist/rmsnorm.js';
import { checkStatus } from '../dist/glue/status.js';
import { writeAddrs, writeParams } from '../dist/call/call-block.js';
import { ADDRS_AT, NO_PARAMS, type Params } from '../dist/call/op.js';
import { F } from '../dist/call/operations/forward.js';
import { B } from '../dist/call/operations/backward.js';

const root = fileURLToPath(new URL('..', import.meta.url));

it('ts/generated/abi.ts is what scripts/gen-abi.mjs writes from crate/src/abi.rs', () => {
  const r = spawnSync(process.execPath, ['scripts/gen-abi.mjs', '--check'], { cwd: root, encoding: 'utf8' });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
});

it('the generated methods (ts/generated/operations.ts, functions.ts) are what scripts/gen-api.ts writes from the operations\' API entries', () => {
  const tsx = fileURLToPath(new URL('../node_modules/.bin/tsx', import.meta.url));
  const r = spawnSync(tsx, ['scripts/gen-api.ts', '--check'], { cwd: root, encoding: 'utf8' });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
});

it('every build was built from the abi.rs the scripts were written from; a module of another is refused before any call', async () => {
  for (const build of ['simd', 'simd-threads', 'scalar'] as const) {
    const w = await loadWasm(build);
    expect([build, w.exports.abi_hash() >>> 0]).toEqual([build, ABI_HASH]);
    // The same module telling another hash, as a stale build or a cached .wasm of another version would.
    const stale = { ...w, exports: { ...w.exports, abi_hash: () => (ABI_HASH ^ 1) >>> 0 } };
    expect(() => new RmsNorm(stale)).toThrow(/comes from another version of the package than its scripts/);
    expect(() => checkAbi(build, stale.exports)).toThrow(Error);
  }
});

describe.each(['simd', 'scalar'] as const)('the %s build', (build) => {
  let k: KernelExports;
  let mem: () => ArrayBufferLike;
  let a: number; // 64 floats of scratch, 16-byte aligned
  let c: number; // a call block
  beforeAll(async () => {
    const w = await loadWasm(build);
    k = w.exports;
    mem = () => w.memory.buffer;
    a = k.alloc_f32(64);
    c = k.alloc_f32(64);
  });
  /** Writes a call block at `c` (params, then the addresses in slot order) and returns the address array's address. */
  const block = (q: Partial<Params>, addrs: Record<number, number>) => {
    const buf = mem();
    const i32 = new Int32Array(buf);
    writeParams(i32, new Float32Array(buf), c >>> 2, { ...NO_PARAMS, dim: 4, stat: 4, eps: 1e-6, ...q });
    const list = Array.from({ length: 10 }, (_, i) => addrs[i] ?? 0);
    writeAddrs(i32, c >>> 2, list, list.length);
    return c + ADDRS_AT;
  };
  const fwd = (o: Partial<Params> & { x?: number; rows?: number } = {}) =>
    k.rms_norm_forward(c, block(o, { [F.x]: o.x ?? a, [F.y]: a, [F.z]: o.gate ? a : 0 }), 0, o.rows ?? 1);
  const bwd = (o: Partial<Params> & { row0?: number } = {}) =>
    k.rms_norm_backward(c, block(o, { [B.dy]: a, [B.x]: a, [B.dx]: a + 32, [B.z]: o.gate ? a : 0, [B.dz]: o.gate ? a + 128 : 0 }), o.row0 ?? 0, 1, 1);

  // One call per status, each failing exactly the check that status names.
  const trigger: Record<keyof typeof Status, () => number> = {
    Ok: () => fwd({}),
    Dim: () => fwd({ dim: 0, stat: 1 }),
    Null: () => fwd({ x: 0 }),
    Align: () => fwd({ x: a + 2 }),
    Bounds: () => fwd({ rows: 2 ** 30 }),
    Shard: () => bwd({ row0: 1 }),
    Stat: () => fwd({ stat: 5 }),
    Dtype: () => fwd({ dtypes: 3 }),
    Gate: () => fwd({ gate: 3 }),
    // No weight: the gain is a row of ones, and a row of 2^30 floats' cannot be allocated.
    Memory: () => fwd({ dim: 2 ** 30, stat: 2 ** 30, rows: 0 }),
  };

  it('every status code is returned by the check it names, and reaches the caller with its meaning', () => {
    expect(Object.keys(trigger).sort()).toEqual(Object.keys(Status).sort());
    for (const [name, code] of Object.entries(Status)) {
      expect({ name, status: trigger[name as keyof typeof Status]() }).toEqual({ name, status: code });
      expect(STATUS_TEXT[code]).toMatch(/\w/);
      if (code === 0) {
        expect(() => checkStatus('f', code)).not.toThrow();
      } else {
        expect(() => checkStatus('f', code)).toThrow(`f: the wasm kernel refused its arguments (status ${code}: ${STATUS_TEXT[code]})`);
      }
    }
    expect(() => checkStatus('f', 99)).toThrow('unknown status 99');
  });

  it('every storage type code runs the forward, the backward (with each gate) and the conversions to and from float32 (quantized codes: refused)', () => {
    const all = Object.values(Dtype);
    expect(all.sort()).toEqual(Object.keys(DTYPE_TEXT).map(Number).sort());
    expect(DTYPE_FACTS.map((d) => d.name)).toEqual(Object.keys(Dtype));
    // A quantized type is a forward's output only: the output code runs (with each gate), and
    // is refused by the backward and as the activations' type.
    const codes = all.filter((dt) => DTYPE_FACTS[dt]!.qmax === 0);
    const quantized = all.filter((dt) => DTYPE_FACTS[dt]!.qmax !== 0);
    expect(quantized.length).toBeGreaterThan(0);
    for (const q of quantized) {
      for (const gate of Object.values(Gate)) {
        const z = gate ? a : 0;
        expect(k.rms_norm_forward(c, block({ out_dtype: q, gate }, { [F.x]: a, [F.y]: a + 128, [F.z]: z, [F.rowScales]: a + 192 }), 0, 1)).toBe(Status.Ok);
        expect(k.rms_norm_forward(c, block({ out_dtype: q, quant_scale: 0.5, gate }, { [F.x]: a, [F.y]: a + 128, [F.z]: z }), 0, 1)).toBe(Status.Ok);
        expect(bwd({ out_dtype: q, gate })).toBe(Status.Dtype);
      }
      expect(k.widen(a, a + 64, 4, q)).toBe(Status.Dtype);
      expect(k.narrow(a + 64, a, 4, q)).toBe(Status.Dtype);
      // Per-row scales need their array; a quantized code is not an activations' type.
      expect(k.rms_norm_forward(c, block({ out_dtype: q }, { [F.x]: a, [F.y]: a + 128 }), 0, 1)).toBe(Status.Null);
      if ((q & DTYPE_MASK) === q) expect(fwd({ dtypes: q })).toBe(Status.Dtype);
    }
    for (const dt of codes) {
      for (const gate of Object.values(Gate)) {
        for (const flags of [0, LLAMA, LLAMA | LLAMA_W]) expect(fwd({ dtypes: dt | flags, gate })).toBe(0);
        expect(bwd({ dtypes: dt, gate })).toBe(0);
      }
      // Every storage type converts to and from float32.
      expect(k.widen(a, a + 64, 4, dt)).toBe(Status.Ok);
      expect(k.narrow(a + 64, a, 4, dt)).toBe(Status.Ok);
    }
    expect(Object.keys(GATE_TEXT).map(Number)).toEqual(Object.values(Gate));
  });
});
