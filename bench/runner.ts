/**
 * Checks one contender against the float64 reference and, if it passes, times it with
 * tinybench; returns its result row (derived columns are filled in later by report.ts).
 * @module
 */
import { Bench } from 'tinybench';
import { checkOutputs, failedCheck, type CaseReference } from '../shared/reference.js';
import { shapeName } from './data.js';
import type { Case, Contender, Instance, Op, Row, Shape } from './types.js';

/** tinybench settings for one shape. */
export interface Timing {
  /** Time budget per task, ms (tinybench `time`). */
  time: number;
  /** Minimum iterations per task (tinybench `iterations`). */
  iterations: number;
  warmupTime: number;
  warmupIterations: number;
}

/**
 * Per-shape tinybench budgets, so that the full default run stays within a few minutes on 2
 * cores: small shapes get many fast samples; 4096×4096 (tens of ms per call for JS) gets a
 * few. `quick` is for tests: a handful of iterations.
 */
export function timingFor(s: Shape, quick: boolean): Timing {
  const n = s.rows * s.dim;
  if (quick) return { time: 15, iterations: 5, warmupTime: 5, warmupIterations: 2 };
  if (n <= 1 << 16) return { time: 800, iterations: 64, warmupTime: 200, warmupIterations: 16 };
  if (n <= 1 << 22) return { time: 1000, iterations: 16, warmupTime: 200, warmupIterations: 4 };
  return { time: 1500, iterations: 8, warmupTime: 0, warmupIterations: 2 };
}

/** Bytes per element the GB/s column assumes (compulsory traffic; see report.ts). */
export const BYTES_PER_ELEM: Record<Op, number> = { forward: 8, backward: 12, copy: 8, layernorm: 8 };

/** A tinybench Bench for one shape (one per shape, since budgets differ by shape). */
export function benchFor(s: Shape, t: Timing): Bench {
  return new Bench({
    name: shapeName(s),
    time: t.time,
    iterations: t.iterations,
    warmupTime: t.warmupTime,
    warmupIterations: t.warmupIterations,
    throws: true,
  });
}

/**
 * Calls shorter than this are batched: one tinybench sample is the mean of `reps` back-to-back
 * calls, so that the clock's own cost (tens of ns) and resolution do not swamp sub-µs calls.
 */
export const MIN_SAMPLE_MS = 0.02;

/** Mean ms of a few calls, to choose the batch size. */
async function probe(inst: Instance): Promise<number> {
  const t0 = performance.now();
  let n = 0;
  do {
    if (inst.async) await inst.fn();
    else inst.fn();
    n++;
  } while (performance.now() - t0 < 2 && n < 1000);
  return (performance.now() - t0) / n;
}

/**
 * The tinybench task function: `reps` calls per sample, reported through tinybench's
 * `overriddenDuration` (per-call mean) and `overriddenIterationCost` (the whole batch, so the
 * time budget stays in wall-clock terms).
 */
export function batched(inst: Instance, reps: number, now: () => number): () => unknown {
  if (reps <= 1) return inst.fn;
  const f = inst.fn;
  if (inst.async) {
    return async () => {
      const t0 = now();
      for (let i = 0; i < reps; i++) await f();
      const t = now() - t0;
      return { overriddenDuration: t / reps, overriddenIterationCost: t };
    };
  }
  return () => {
    const t0 = now();
    for (let i = 0; i < reps; i++) f();
    const t = now() - t0;
    return { overriddenDuration: t / reps, overriddenIterationCost: t };
  };
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * Makes `k` for `c`, calls it once, checks its outputs, then runs it as a task of `bench`
 * (warmup, then run) and removes the task. Frees the contender's buffers in any case.
 */
export async function measure(bench: Bench, k: Contender, c: Case, ref: CaseReference): Promise<Row> {
  const row: Row = {
    shape: shapeName(c), rows: c.rows, dim: c.dim, op: k.op, contender: k.name, family: k.family,
    threads: k.threads, zeroCopy: k.zeroCopy, note: k.note ?? null, bytesPerElem: BYTES_PER_ELEM[k.op],
    check: failedCheck('not run'), medianMs: null, meanMs: null, rmePct: null, samples: null,
    gelemPerS: null, gbPerS: null, vsNaive: null, pctOfCopy: null, pctOfRoof: null, batch: null, error: null,
  };
  let inst: Instance | undefined;
  const taskName = `${k.op}:${k.name}`;
  try {
    inst = await k.make(c);
    row.note = k.note ?? null;
    await inst.fn();
    row.check = checkOutputs(k.op, inst.outputs(), c, ref);
    if (!row.check.passed) return row;
    const reps = Math.min(10_000, Math.ceil(MIN_SAMPLE_MS / Math.max(await probe(inst), 1e-6)));
    row.batch = reps;
    bench.add(taskName, batched(inst, reps, () => bench.now()), { async: inst.async });
    const task = bench.getTask(taskName)!;
    await task.warmup();
    await task.run();
    const r = task.result;
    if (r.state === 'errored') throw r.error;
    if (r.state !== 'completed') throw new Error(`tinybench task ended in state ${r.state}`);
    const n = c.rows * c.dim;
    if (!(r.latency.p50 > 0)) throw new Error(`median ${r.latency.p50} ms: below the timer's resolution`);
    row.medianMs = r.latency.p50;
    row.meanMs = r.latency.mean;
    row.rmePct = r.latency.rme;
    row.samples = r.latency.samplesCount;
    row.gelemPerS = n / (row.medianMs * 1e6);
    row.gbPerS = (n * row.bytesPerElem) / (row.medianMs * 1e6);
  } catch (e) {
    row.error = message(e);
    if (row.check.detail === 'not run') row.check = failedCheck(`threw: ${row.error}`);
  } finally {
    if (bench.getTask(taskName)) bench.remove(taskName);
    try {
      await inst?.dispose?.();
    } catch (e) {
      row.error ??= `dispose: ${message(e)}`;
    }
  }
  return row;
}
