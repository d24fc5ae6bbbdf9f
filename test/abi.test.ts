// The wasm boundary's codes are defined once, in crate/src/abi.rs: ts/abi.ts must be what
// scripts/gen-abi.mjs writes from it, every status code a kernel can return must reach the
// caller as its meaning (not "unknown status"), and every storage type code must run.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { DTYPE_TEXT, Dtype, LLAMA, LLAMA_W, STATUS_TEXT, Status } from '../dist/abi.js';
import { loadWasm, type KernelExports } from '../dist/load.js';
import { checkStatus } from '../dist/status.js';

const root = fileURLToPath(new URL('..', import.meta.url));

it('ts/abi.ts is what scripts/gen-abi.mjs writes from crate/src/abi.rs', () => {
  const r = spawnSync(process.execPath, ['scripts/gen-abi.mjs', '--check'], { cwd: root, encoding: 'utf8' });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
});

describe.each(['simd', 'scalar'] as const)('the %s build', (build) => {
  let k: KernelExports;
  let a: number; // 64 floats of scratch, 16-byte aligned
  beforeAll(async () => {
    k = (await loadWasm(build)).exports;
    a = k.alloc_f32(64);
  });
  const fwd = (o: Partial<Record<'x' | 'rows' | 'dim' | 'stat' | 'dtypes', number>>) =>
    k.rms_norm_forward(o.x ?? a, 0, 0, a, 0, 0, o.rows ?? 1, o.dim ?? 4, 1e-6, 0, o.stat ?? 4, o.dtypes ?? 0);

  // One call per status, each failing exactly the check that status names.
  const trigger: Record<keyof typeof Status, () => number> = {
    Ok: () => fwd({}),
    Dim: () => fwd({ dim: 0, stat: 1 }),
    Null: () => fwd({ x: 0 }),
    Align: () => fwd({ x: a + 2 }),
    Bounds: () => fwd({ rows: 2 ** 30 }),
    Shard: () => k.rms_norm_backward(a, a, 0, 0, 0, a, 0, 0, 1, 4, 1e-6, 0, 4, 1, 1, 0),
    Stat: () => fwd({ stat: 5 }),
    Dtype: () => fwd({ dtypes: 3 }),
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

  it('every storage type code runs the forward, the backward and (half ones) the conversions', () => {
    const codes = Object.values(Dtype);
    expect(codes.sort()).toEqual(Object.keys(DTYPE_TEXT).map(Number).sort());
    for (const dt of codes) {
      for (const flags of [0, LLAMA, LLAMA | LLAMA_W]) expect(fwd({ dtypes: dt | flags })).toBe(0);
      expect(k.rms_norm_backward(a, a, 0, 0, 0, a, 0, 0, 1, 4, 1e-6, 0, 4, 0, 1, dt)).toBe(0);
      const half = dt !== Dtype.float32 ? Status.Ok : Status.Dtype;
      expect(k.widen_half(a, a + 64, 4, dt)).toBe(half);
      expect(k.narrow_half(a + 64, a, 4, dt)).toBe(half);
    }
  });
});
