/**
 * The inputs of a call that an output would overwrite before the kernel reads them, replaced
 * by snapshots (the placer's one step that copies an input in JavaScript; see placer.ts).
 * @module
 */
import { COPIED, RESIDENT, throughWindow, type Placement } from './placement.js';
import { ROW } from '../op.js';

/**
 * Replaces each input that some output would overwrite before the kernel reads it by a
 * snapshot (a JavaScript copy, then streamed). Safe pairs: disjoint ranges, or exactly the
 * same range where the operation allows that alias. One-row inputs copied into the window
 * and one-row outputs copied out at the end cannot be overwritten early. Returns whether it
 * made a snapshot.
 */
export function snapshotConflicts(p: Placement, fresh: number): boolean {
  const ops = p.op.operands;
  const slots = p.slots;
  let given = false;
  for (let o = 0; o < ops.length; o++) if (ops[o]!.out && slots[o]!.arr !== null && !(fresh & (1 << o))) given = true;
  if (!given) return false;
  let made = false;
  for (let i = 0; i < ops.length; i++) {
    const inp = ops[i]!;
    const ti = slots[i]!;
    const a = ti.arr;
    if (inp.out || a === null) continue;
    for (let o = 0; o < ops.length; o++) {
      const out = ops[o]!;
      const to = slots[o]!;
      const b = to.arr;
      if (!out.out || b === null || to.kind !== ti.kind || fresh & (1 << o)) continue;
      if (throughWindow(ti.kind) && (inp.shape === ROW || out.shape === ROW)) continue;
      const io = ti.kind === RESIDENT ? ti.base : a.byteOffset;
      const oo = to.kind === RESIDENT ? to.base : b.byteOffset;
      const il = a.BYTES_PER_ELEMENT * a.length;
      const ol = b.BYTES_PER_ELEMENT * b.length;
      if (io >= oo + ol || oo >= io + il) continue;
      if (throughWindow(ti.kind) && a.buffer !== b.buffer) continue;
      if (io === oo && il === ol && out.alias.includes(i)) continue;
      ti.arr = a.slice();
      ti.kind = COPIED;
      made = true;
      break;
    }
  }
  return made;
}
