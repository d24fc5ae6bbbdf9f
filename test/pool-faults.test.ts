/**
 * The pool under faults and bad input: workers that throw or are terminated mid-job, destroy,
 * AbortSignal, argument errors, and a pool that is never destroyed not keeping Node alive.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createPool, init, instance, type RmsNormPool, type RmsNorm } from '../dist/index.js';
import { poolHooks } from '../dist/pool/caller/hooks.js';
import { randn } from '../shared/reference.js';

const hooks = (p: RmsNormPool) => poolHooks(p);

let sync: RmsNorm;
beforeAll(async () => {
  await init();
  sync = instance()!;
});

const pools: RmsNormPool[] = [];
async function pool(threads = 2): Promise<RmsNormPool> {
  const p = await createPool({ threads });
  pools.push(p);
  return p;
}
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.destroy()));
});

/** 'resolved', or the rejection's message (never the value: it may be 16M floats). */
function outcome(p: Promise<unknown>): Promise<string> {
  return p.then(
    () => 'resolved',
    (e: Error) => String(e?.message ?? e),
  );
}

/** Waits until worker `i` of `p` is inside a job. */
async function untilBusy(p: RmsNormPool, i: number): Promise<void> {
  const t0 = Date.now();
  while (!hooks(p).busy(i) && Date.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 0));
  expect(hooks(p).busy(i)).toBe(true);
}

function same(a: Float32Array, b: Float32Array): boolean {
  return a.length === b.length && a.every((v, i) => Object.is(v, b[i]));
}

/** A call that runs long enough (tens of ms) to be interrupted. */
function bigProblem() {
  const rows = 4096;
  const dim = 4096;
  return { x: randn(rows * dim, 1), dy: randn(rows * dim, 2), w: randn(dim, 3), rows, dim };
}

describe('worker faults', () => {
  it('a worker that throws rejects its job with an Error saying so; it is replaced and later jobs succeed', async () => {
    const p = await pool(2);
    const err = await hooks(p).failWorker(1);
    expect(err).toBeInstanceOf(Error);
    expect(String((err as Error).message)).toMatch(/worker 1 died during the job/);
    expect(String((err as Error).message)).toMatch(/failure requested by the pool/);
    const x = randn(256 * 512, 7);
    const w = randn(512, 8);
    expect(same(await p.rmsNorm(x, w), sync.rmsNorm(x, w))).toBe(true);
    const dy = randn(256 * 512, 9);
    const g = await p.rmsNormBackward(dy, x, w);
    expect(same(g.dweight!, sync.rmsNormBackward(dy, x, w).dweight!)).toBe(true);
    expect(p.threads).toBe(2);
  });

  it('a worker terminated mid-job rejects that job; queued jobs and later jobs succeed', async () => {
    const p = await pool(2);
    const { x, dy, w } = bigProblem();
    const running = p.rmsNormBackward(dy, x, w);
    const small = randn(128 * 1024, 11);
    const queued = p.rmsNorm(small, null, { dim: 1024 });
    // Worker 0 stops inside the first chunk it claims; take it away while it holds it.
    hooks(p).hold(0);
    await untilBusy(p, 0);
    hooks(p).killWorker(0);
    expect(await outcome(running)).toMatch(/worker 0 died during the job/);
    hooks(p).release(); // (its replacement would hold too)
    expect(same(await queued, sync.rmsNorm(small, null, { dim: 1024 }))).toBe(true);
    const again = await p.rmsNormBackward(dy, x, w);
    const want = sync.rmsNormBackward(dy, x, w);
    expect(same(again.dx, want.dx)).toBe(true);
    expect(same(again.dweight!, want.dweight!)).toBe(true);
  });
});

describe('worker faults while streaming plain arrays', () => {
  it('a streamed job whose worker dies completes with the right bits or is rejected, in bounded time; later jobs succeed', async () => {
    const p = await pool(2);
    // 2 threads stream with one worker (this thread copies): kill it, then start a job before
    // the pool can have heard of the death.
    const rows = 512;
    const dim = 1024;
    const x = randn(rows * dim, 21);
    const w = randn(dim, 22);
    await p.rmsNorm(x, w); // warm: the job below is dispatched at once
    hooks(p).killWorker(0);
    const t0 = Date.now();
    // The calling thread computes every chunk nobody has claimed, so a job whose worker dies
    // before claiming one may still complete, and then with the right bits; if the death is
    // noticed first, the job is rejected naming it. Either way within a bounded time.
    const want = sync.rmsNorm(x, w);
    const got = await p.rmsNorm(x, w).then(
      (y) => (same(y, want) ? 'resolved with the sync bits' : 'resolved with wrong bits'),
      (e: Error) => e.message,
    );
    expect(got).toMatch(/resolved with the sync bits|worker 0 died during the job/);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(same(await p.rmsNorm(x, w), sync.rmsNorm(x, w))).toBe(true);
    const dy = randn(rows * dim, 23);
    const g = await p.rmsNormBackward(dy, x, w);
    expect(same(g.dweight!, sync.rmsNormBackward(dy, x, w).dweight!)).toBe(true);
  });
});

describe('destroy', () => {
  it('rejects queued and running jobs, and every later call at once', async () => {
    const p = await pool(2);
    const { x, w } = bigProblem();
    // Worker 0 stops inside the first chunk it claims, so the first job cannot finish.
    hooks(p).hold(0);
    const jobs = [p.rmsNormBackward(x, x, w), p.rmsNorm(x, w), p.rmsNormBackward(x, x, w)].map(outcome);
    await untilBusy(p, 0);
    await p.destroy();
    for (const j of jobs) expect(await j).toMatch(/destroyed/);
    await expect(p.rmsNorm(new Float32Array(8), null, { dim: 8 })).rejects.toThrow(/destroyed/);
    await expect(p.ping()).rejects.toThrow(/destroyed/);
    await p.destroy(); // twice is harmless
  });

  it('a pool that is never destroyed does not keep a Node process alive', () => {
    const entry = fileURLToPath(new URL('../dist/index.js', import.meta.url));
    const script = `
      const m = await import(${JSON.stringify(entry)});
      const p = await m.createPool({ threads: 2 });
      const y = await p.rmsNorm(new Float32Array(256 * 1024).fill(2), null, { dim: 1024 });
      console.log('done', y[0]);
    `;
    const t0 = Date.now();
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 });
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toMatch(/^done /);
    expect(Math.abs(Number(r.stdout.trim().slice(5)) - 1)).toBeLessThan(1e-6); // 2 / rms(2)
    expect(r.status).toBe(0);
    expect(Date.now() - t0).toBeLessThan(20_000);
  });
});

describe('abort', () => {
  it('an aborted signal rejects a queued job with an AbortError; the pool stays healthy', async () => {
    const p = await pool(2);
    const { x, w } = bigProblem();
    const running = p.rmsNormBackward(x, x, w);
    const ac = new AbortController();
    const small = randn(64 * 1024, 12);
    const queued = p.rmsNorm(small, null, { dim: 1024, signal: ac.signal });
    ac.abort();
    await expect(queued).rejects.toMatchObject({ name: 'AbortError' });
    expect(same((await running).dweight!, sync.rmsNormBackward(x, x, w).dweight!)).toBe(true);
    expect(same(await p.rmsNorm(small, null, { dim: 1024 }), sync.rmsNorm(small, null, { dim: 1024 }))).toBe(true);
  });

  it('an already aborted signal rejects at once', async () => {
    const p = await pool(2);
    const out = new Float32Array(64).fill(7);
    await expect(p.rmsNorm(new Float32Array(64), null, { dim: 64, out, signal: AbortSignal.abort() })).rejects.toMatchObject({
      name: 'AbortError',
    });
    expect(out.every((v) => v === 7)).toBe(true);
  });
});

describe('bad arguments', () => {
  it('reject with the sync API errors before anything runs; the pool keeps working', async () => {
    const p = await pool(2);
    const out = new Float32Array(8).fill(5);
    await expect(p.rmsNorm(new Float64Array(8) as never, null, { dim: 8 })).rejects.toThrow(TypeError);
    await expect(p.rmsNorm(new Float64Array(8) as never, null, { dim: 8 })).rejects.toThrow(/pool\.rmsNorm: x must be a Float32Array/);
    await expect(p.rmsNorm(new Float32Array(8), null, { dim: 3, out })).rejects.toThrow(RangeError);
    await expect(p.rmsNorm(new Float32Array(8), null, { dim: 8, eps: -1, out })).rejects.toThrow(/options\.eps/);
    await expect(p.rmsNorm(new Float32Array(8), null, { dim: 8, signal: 'no' as never })).rejects.toThrow(/options\.signal/);
    await expect(p.rmsNormBackward(new Float32Array(8), new Float32Array(16), null, { dim: 8 })).rejects.toThrow(
      /dy\.length \(8\) must equal x\.length \(16\)/,
    );
    expect(out.every((v) => v === 5)).toBe(true);
    const x = randn(512 * 256, 4);
    expect(same(await p.rmsNorm(x, null, { dim: 256 }), sync.rmsNorm(x, null, { dim: 256 }))).toBe(true);
  });

  it('createPool checks its options', async () => {
    await expect(createPool({ threads: 0 })).rejects.toThrow(RangeError);
    await expect(createPool({ threads: 1.5 })).rejects.toThrow(/options\.threads must be an integer/);
    await expect(createPool({ threads: '2' as never })).rejects.toThrow(TypeError);
  });
});
