// The raw kernel exports' calling convention, for the bench scripts that call them directly
// (per-call.mjs, half-breakdown.mjs, ab-builds.mjs): a call block in wasm memory holding the
// call's parameters, then its operands' addresses (what ts/call/call-block.ts writes for the API).
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as block from '../dist/call/call-block.js';
import * as ops from '../dist/call/ops.js';

/** This checkout's call-block layout (its dist/): what {@link callBlock} writes by default. */
export const LAYOUT = { ...block, ...ops };

/**
 * The call-block layout of the checkout whose `wasm/` folder is `wasmDir` (its `dist/`, as
 * built with it), or this one's when that has none: a build of another commit reads the
 * parameter block and the operand order of its own ABI.
 */
export async function layoutOf(wasmDir) {
  const dist = new URL(`${pathToFileURL(resolve(wasmDir, '..', 'dist')).href}/`);
  if (!existsSync(new URL('call-block.js', dist))) return LAYOUT;
  return { ...(await import(new URL('call-block.js', dist).href)), ...(await import(new URL('ops.js', dist).href)) };
}

/**
 * A call block in the memory of `ex` (a build's raw exports) for one forward or backward:
 * `params` as ops.ts's Params (dim required; stat defaults to dim, eps to 1e-6), `addrs` the
 * operands' byte addresses by name (abi.ts's ForwardOperand / BackwardOperand; absent: 0).
 * `run(rows)` calls the kernel on rows [0, rows) and returns its status; `set(name, addr)`
 * moves one operand (e.g. to the next row) without rewriting the rest. `layout`: the block's
 * layout ({@link layoutOf} for a build of another commit).
 */
export function callBlock(ex, op, params, addrs, layout = LAYOUT) {
  const { writeAddrs, writeParams, ADDRS_AT, B, F, NO_PARAMS } = layout;
  const names = Object.keys(op === 'forward' ? F : B);
  const at = ex.alloc_f32(64);
  let i32 = new Int32Array(ex.memory.buffer);
  const q = { ...NO_PARAMS, eps: 1e-6, stat: params.dim, ...params };
  writeParams(i32, new Float32Array(ex.memory.buffer), at >>> 2, q);
  writeAddrs(i32, at >>> 2, names.map((n) => addrs[n] ?? 0), names.length);
  const slot = (n) => (at + ADDRS_AT) / 4 + names.indexOf(n);
  const fwd = (rows) => ex.rms_norm_forward(at, at + ADDRS_AT, 0, rows);
  const bwd = (rows) => ex.rms_norm_backward(at, at + ADDRS_AT, 0, rows, rows);
  return {
    run: op === 'forward' ? fwd : bwd,
    set(n, addr) {
      if (i32.buffer !== ex.memory.buffer) i32 = new Int32Array(ex.memory.buffer);
      i32[slot(n)] = addr;
    },
  };
}
