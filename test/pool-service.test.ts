/**
 * The pool as a long-running Node service uses it: no memory left behind by create/destroy,
 * the event loop keeps turning while calls are queued, destroy settles everything promptly,
 * one AbortSignal over many calls, inputs detached while queued, Node started with V8 flags,
 * and calls under CPU contention. Bounds here are loose enough for a loaded 2-core CI machine
 * (the tight figures come from `npm run bench:pool`); each would fail on the behaviour it
 * replaced (4 MiB per cycle, 0 timer ticks in 270 ms, a 5 s destroy, a warning, V8's message,
 * ERR_WORKER_INVALID_EXEC_ARGV, 9× under contention).
 */
import { spawn, spawnSync } from 'node:child_process';
import { getEventListeners } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, init, instance, type RmsNorm, type RmsNormPool } from '../dist/index.js';
import { poolHooks } from '../dist/pool/caller/hooks.js';
import { randn } from '../shared/reference.js';

let sync: RmsNorm;
beforeAll(async () => {
  // the pool's shared instance, so that its views are used in place by the pool
  await init({ build: 'simd-threads' });
  sync = instance()!;
});

const mib = (bytes: number) => bytes / 2 ** 20;
const same = (a: Float32Array, b: Float32Array) => a.length === b.length && a.every((v, i) => Object.is(v, b[i]));

describe('create and destroy', () => {
  it('1000 pools, each with sharded work, leave the wasm memory within 8 MiB of where it started', async () => {
    const x = randn(256 * 1024, 1);
    const w = randn(1024, 2);
    const want = sync.rmsNorm(x, w);
    // The first pool's control block and scratch settle the allocator's layout.
    const first = await createPool({ threads: 2 });
    await first.rmsNorm(x, w);
    await first.destroy();
    const before = sync.wasm.memory.buffer.byteLength;
    for (let i = 0; i < 1000; i++) {
      const p = await createPool({ threads: 2 });
      const y = await p.rmsNorm(x, w);
      if (i % 100 === 0) expect(same(y, want)).toBe(true);
      await p.destroy();
    }
    expect(mib(sync.wasm.memory.buffer.byteLength - before)).toBeLessThan(8);
    // The instance still allocates normally afterwards.
    const b = sync.allocF32(1 << 20);
    b.free();
  }, 240_000);

  it('destroy() during a 128 MiB call settles it and every queued call within 250 ms', async () => {
    const p = await createPool({ threads: 2 });
    const x = randn(8192 * 4096, 3);
    const w = randn(4096, 4);
    // Worker 0 stops inside the first chunk it claims, so the call cannot finish before destroy.
    const hooks = poolHooks(p);
    hooks.hold(0);
    const running = p.rmsNorm(x, w).then(() => 'resolved', (e: Error) => e.message);
    const queued = p.rmsNorm(x, w).then(() => 'resolved', (e: Error) => e.message);
    for (let t = Date.now(); !hooks.busy(0) && Date.now() - t < 10_000; ) await new Promise((r) => setTimeout(r, 1));
    expect(hooks.busy(0)).toBe(true);
    const t0 = performance.now();
    const destroyed = p.destroy();
    const results = await Promise.all([running, queued]);
    const settled = performance.now() - t0;
    await destroyed;
    expect(results).toEqual([expect.stringMatching(/destroyed/), expect.stringMatching(/destroyed/)]);
    expect(settled).toBeLessThan(250);
  });
});

describe('a burst of queued calls', () => {
  let pool: RmsNormPool;
  beforeAll(async () => {
    pool = await createPool({ threads: 2 });
  });
  afterAll(() => pool.destroy());

  it('500 queued 256×1024 calls let timers run (gap < 50 ms) and a 20 ms timer abort the rest', async () => {
    const x = randn(256 * 1024, 5);
    const w = randn(1024, 6);
    const want = sync.rmsNorm(x, w);
    const ac = new AbortController();
    let last = performance.now();
    let maxGap = 0;
    let ticks = 0;
    const iv = setInterval(() => {
      const now = performance.now();
      maxGap = Math.max(maxGap, now - last);
      last = now;
      ticks++;
    }, 5);
    const t0 = performance.now();
    let firedAt = 0;
    setTimeout(() => {
      firedAt = performance.now() - t0;
      ac.abort();
    }, 20);
    const calls = Array.from({ length: 500 }, () =>
      pool.rmsNorm(x, w, { signal: ac.signal }).then(
        (y) => (same(y, want) ? 'ok' : 'wrong bits'),
        (e: Error) => e.name,
      ),
    );
    const results = await Promise.all(calls);
    clearInterval(iv);
    maxGap = Math.max(maxGap, performance.now() - last);
    expect(results.filter((r) => r !== 'ok' && r !== 'AbortError')).toEqual([]);
    expect(firedAt).toBeGreaterThan(0);
    expect(firedAt).toBeLessThan(60);
    expect(results.filter((r) => r === 'AbortError').length).toBeGreaterThan(250);
    expect(ticks).toBeGreaterThan(0);
    expect(maxGap).toBeLessThan(50);
    // One listener per signal while calls were queued, none once they settled: no warning.
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
  });

  it('one AbortSignal over 50 calls adds one listener, removes it when they settle, and warns nothing', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on('warning', onWarning);
    try {
      const ac = new AbortController();
      const x = randn(256 * 1024, 7);
      const calls = Array.from({ length: 50 }, () => pool.rmsNorm(x, null, { dim: 1024, signal: ac.signal }));
      expect(getEventListeners(ac.signal, 'abort').length).toBeLessThanOrEqual(1);
      await Promise.all(calls);
      expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
      await new Promise((r) => setTimeout(r, 10));
      expect(warnings).not.toContain('MaxListenersExceededWarning');
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('an input detached while its call is queued rejects with a TypeError naming it', async () => {
    const big = randn(4096 * 2048, 8);
    const x = randn(256 * 1024, 9);
    const ahead = pool.rmsNorm(big, null, { dim: 2048 });
    const queued = pool.rmsNorm(x, null, { dim: 1024 });
    structuredClone(x.buffer, { transfer: [x.buffer] }); // detaches x
    await ahead;
    const e = await queued.then(() => null, (err: Error) => err);
    expect(e).toBeInstanceOf(TypeError);
    expect(e!.message).toMatch(/^pool\.rmsNorm: x is a view of a detached ArrayBuffer/);
  });
});

describe('Node started with flags', () => {
  const entry = fileURLToPath(new URL('../dist/index.js', import.meta.url));
  it.each([
    ['--max-old-space-size=4000'],
    ['--expose-gc'],
    ['--stack-size=2000', '--enable-source-maps'],
    ['--max-semi-space-size=16', '--no-warnings'],
  ])('createPool and a sharded call work under node %s', (...flags) => {
    const script = `
      const m = await import(${JSON.stringify(entry)});
      const p = await m.createPool({ threads: 2 });
      const y = await p.rmsNorm(new Float32Array(256 * 1024).fill(2), null, { dim: 1024 });
      await p.destroy();
      console.log('ok', y[0]);`;
    const r = spawnSync(process.execPath, [...flags, '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 });
    expect(r.stderr).not.toMatch(/ERR_WORKER_INVALID_EXEC_ARGV/);
    expect(r.stdout.trim()).toBe(`ok ${Math.fround(2 / Math.sqrt(4 + Math.fround(1e-6)))}`);
  });
});

describe('under CPU contention', () => {
  it('with a CPU-bound process beside it, a 128×2048 pool call takes at most 2× the sync call', async () => {
    const burner = spawn(process.execPath, ['-e', 'const end = Date.now() + 60_000; while (Date.now() < end) {}'], { stdio: 'ignore' });
    const p = await createPool({ threads: 2 });
    try {
      await new Promise((r) => setTimeout(r, 200));
      const x = randn(128 * 2048, 10);
      const w = randn(2048, 11);
      const out = new Float32Array(x.length);
      const median = async (f: () => unknown, n: number) => {
        const t: number[] = [];
        for (let i = 0; i < n; i++) {
          const a = performance.now();
          await f();
          t.push(performance.now() - a);
        }
        return t.sort((a, b) => a - b)[n >> 1]!;
      };
      for (let i = 0; i < 20; i++) await p.rmsNorm(x, w, { out }); // lets the pool see the contention
      const s = await median(() => sync.rmsNorm(x, w, { out }), 100);
      const q = await median(() => p.rmsNorm(x, w, { out }), 100);
      expect(same(out, sync.rmsNorm(x, w))).toBe(true);
      expect(q / s).toBeLessThan(2);
    } finally {
      burner.kill();
      await p.destroy();
    }
  });
});
