/**
 * The dispatcher where the calling thread cannot block (a page's main thread): it waits for a
 * job's DONE word with Atomics.waitAsync, and a wake-up alone must not end the wait. The
 * worker that completes a job stores DONE and then notifies; when the page saw the store and
 * went on to the next job, that notification comes late, during the next job; a wait that ended
 * on it would take that job for done before its last chunks (results with rows of zeros, as
 * Firefox under load showed). Workers are stood in for here: the test plays their part on the
 * control block itself.
 */
import { describe, expect, it } from 'vitest';
import * as C from '../dist/pool/control.js';
import { Dispatcher } from '../dist/pool/caller/dispatch.js';
import type { Workers } from '../dist/pool/caller/workers.js';
import type { KernelExports, WasmMemoryLike } from '../dist/glue/load.js';
import { NO_PARAMS } from '../dist/call/op.js';

const tick = (ms = 20) => new Promise((r) => setTimeout(r, ms));

function dispatcher() {
  const buffer = new SharedArrayBuffer(4 * C.controlWords(2));
  const ctl = new Int32Array(buffer);
  const woken: { worker: number; job: number }[] = [];
  const workers = { ready: async () => {}, wake: (worker: number, job: number) => woken.push({ worker, job }) } as unknown as Workers;
  const memory: WasmMemoryLike = { buffer } as WasmMemoryLike;
  const d = new Dispatcher({} as KernelExports, memory, ctl, workers, 2, 2, 64, false);
  return { d, ctl, woken };
}

const noop = { op: C.Op.NOOP, addrs: [], naddrs: 0, rows: 0, params: NO_PARAMS, work: 0, blockAligned: false };

describe('a job awaited without blocking', () => {
  it('is not taken for done on a notification while DONE is 0, only when DONE is 1', async () => {
    const { d, ctl, woken } = dispatcher();
    let settled = false;
    const run = d.run(noop).then(() => (settled = true));
    await tick();
    expect(woken.map((w) => w.worker)).toEqual([0, 1]);
    // The late notification of an earlier job's completion.
    Atomics.notify(ctl, C.DONE);
    await tick();
    expect(settled).toBe(false);
    Atomics.store(ctl, C.DONE, 1);
    Atomics.notify(ctl, C.DONE);
    await run;
    expect(settled).toBe(true);
  });

  it('names the job and its opcode in one word, and each wake-up names the job it is for', async () => {
    const { d, ctl, woken } = dispatcher();
    const run = d.run(noop);
    await tick();
    const jw = Atomics.load(ctl, C.JOB);
    expect(jw >>> 16).toBe(C.Op.NOOP);
    expect(woken.every((w) => w.job === (jw & 0xffff))).toBe(true);
    Atomics.store(ctl, C.DONE, 1);
    Atomics.notify(ctl, C.DONE);
    await run;
  });
});
