/**
 * How memory copies scale with threads on this machine: `dst.set(src)` of one buffer by one
 * worker, and by two workers at once (each half), both on SharedArrayBuffers. A pool call on
 * plain arrays has the calling thread copy the rows in and out while the workers compute; it
 * pays only where the machine gives two threads more bandwidth than one. Medians of rounds.
 *
 * Run alone: `tsx bench/copy-scaling.ts [MiB ...]` (default 16 64); bench/pool.ts reports it.
 * @module
 */
import { Worker } from 'node:worker_threads';

/** The worker: waits for a round, copies its part `reps` times, reports its time. */
const WORKER = `
const { parentPort } = require('node:worker_threads');
parentPort.on('message', ({ src, dst, from, to, reps, go }) => {
  const s = new Float32Array(src).subarray(from, to), d = new Float32Array(dst).subarray(from, to);
  const flag = new Int32Array(go);
  while (Atomics.load(flag, 0) === 0);
  const t = performance.now();
  for (let i = 0; i < reps; i++) d.set(s);
  parentPort.postMessage(performance.now() - t);
});
`;

/** One size's result: GB/s (bytes read + written ÷ time) by one thread and by two at once. */
export interface CopyScaling {
  mib: number;
  oneGBps: number;
  twoGBps: number;
}

/** Copies of `mib` MiB by one worker and by two, `rounds` rounds each (alternating). */
export async function copyScaling(mib: number, rounds = 7): Promise<CopyScaling> {
  const n = (mib << 20) / 4;
  const src = new SharedArrayBuffer(4 * n);
  const dst = new SharedArrayBuffer(4 * n);
  new Float32Array(src).fill(1);
  new Float32Array(dst).fill(0);
  const workers = [0, 1].map(() => new Worker(WORKER, { eval: true }));
  const reps = Math.max(2, Math.round(256 / mib));
  const round = async (parts: number): Promise<number> => {
    const go = new SharedArrayBuffer(4);
    const done = workers.slice(0, parts).map(
      (w, i) =>
        new Promise<number>((resolve) => {
          w.once('message', resolve);
          w.postMessage({ src, dst, from: (i * n) / parts, to: ((i + 1) * n) / parts, reps, go });
        }),
    );
    await new Promise((r) => setTimeout(r, 20)); // both waiting on the flag
    Atomics.store(new Int32Array(go), 0, 1);
    const ms = Math.max(...(await Promise.all(done)));
    return (2 * 4 * n * reps) / ms / 1e6;
  };
  const one: number[] = [];
  const two: number[] = [];
  await round(1);
  await round(2);
  for (let r = 0; r < rounds; r++) {
    one.push(await round(1));
    two.push(await round(2));
  }
  await Promise.all(workers.map((w) => w.terminate()));
  const med = (a: number[]) => [...a].sort((u, v) => u - v)[a.length >> 1]!;
  return { mib, oneGBps: med(one), twoGBps: med(two) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const sizes = process.argv.length > 2 ? process.argv.slice(2).map(Number) : [16, 64];
  for (const mib of sizes) {
    const c = await copyScaling(mib);
    console.log(`${mib} MiB: one thread ${c.oneGBps.toFixed(1)} GB/s, two ${c.twoGBps.toFixed(1)} GB/s (${(c.twoGBps / c.oneGBps).toFixed(2)}x)`);
  }
}
