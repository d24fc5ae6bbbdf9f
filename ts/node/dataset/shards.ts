/**
 * Which outputs one shard of N writes. Every process given the same dataset computes the same
 * plan from the file list alone (names, sizes, headers), with no coordination, so N processes
 * with indices 0..N−1 write every output exactly once.
 *
 * A file bigger than a shard's share of the bytes (total / N) would leave the other shards
 * idle while one works through it, so it is split: into row ranges of its first axis, each
 * written as its own part file `name.part-K-of-P.npy` (K from 0; zero-padded, so that the
 * names sort in order). Only files above {@link SPLIT_BYTES} are split: below that a part is
 * too small to repay the extra output file that downstream readers must put back together.
 * @module
 */
import { fromBytes, stemOf, type FsPath } from '../io/paths.js';
import { byBytes, sortByOutput, type DatasetFile } from './inputs.js';

/** Files at most this big (64 MiB) are never split, whatever the shard count. */
export const SPLIT_BYTES = 64 << 20;
/** The smallest part a split makes (1 MiB, or the split size when that is smaller): a huge shard count cuts a file into no more parts than that. */
const PART_MIN_BYTES = 1 << 20;

const byRel = (a: DatasetFile, b: DatasetFile): number => byBytes(a.rel, b.rel);

/** The output path of part `k` of `count` of the output `rel`: `a/b.npy` → `a/b.part-1-of-4.npy`. */
export function partName(rel: FsPath, k: number, count: number): FsPath {
  const [stem, ext] = stemOf(rel);
  const width = String(count).length;
  return fromBytes(Buffer.concat([stem, Buffer.from(`.part-${String(k).padStart(width, '0')}-of-${count}`), ext]));
}

/**
 * `files` with every file worth splitting between `count` shards replaced by its parts: a file
 * of more than `splitBytes` and more than `total / count` bytes becomes
 * `min(count, ceil(size / share), first-axis length, ceil(size / 1 MiB))` contiguous, near-equal ranges of its
 * first axis. `firstAxis(f)` is the length of that axis (0 or 1 when it cannot be split, e.g.
 * a header that does not parse: that file then fails in the run as a whole file would).
 * Sorted by output path; two outputs with one name (an input named like another's part) is a
 * NormalizeError.
 */
export async function splitLarge(
  files: readonly DatasetFile[],
  count: number,
  splitBytes: number,
  firstAxis: (f: DatasetFile) => Promise<number>,
): Promise<DatasetFile[]> {
  if (count === 1) return [...files];
  const share = files.reduce((a, f) => a + f.bytes, 0) / count;
  const out: DatasetFile[] = [];
  for (const f of files) {
    const n = f.bytes > Math.max(share, splitBytes) ? await firstAxis(f) : 1;
    const parts = Math.min(count, n, Math.ceil(f.bytes / share), Math.ceil(f.bytes / Math.max(1, Math.min(PART_MIN_BYTES, splitBytes))));
    if (parts < 2) {
      out.push(f);
      continue;
    }
    for (let k = 0; k < parts; k++) {
      const start = Math.floor((k * n) / parts);
      const end = Math.floor(((k + 1) * n) / parts);
      const bytes = Math.round((f.bytes * (end - start)) / n);
      out.push({ ...f, rel: partName(f.rel, k, parts), origin: f.rel, bytes, part: { index: k, count: parts, start, end } });
    }
  }
  return sortByOutput(out);
}

/**
 * The outputs shard `index` of `count` writes. Outputs go, largest first (ties by output path),
 * to the shard with the fewest bytes so far (ties: the lowest index), which balances bytes
 * rather than file counts. Only shards that have been given something are kept (a heap of
 * their loads); the others all have none, and the lowest of them is the next in line. That
 * keeps it O(files · log files) in time and O(files) in memory, whatever the count.
 * Returned in output-path order.
 */
export function shardOf(files: readonly DatasetFile[], index: number, count: number): DatasetFile[] {
  if (count === 1) return [...files];
  // A binary min-heap of [bytes so far, shard] of the shards given something, ordered by
  // bytes, then shard; `fresh` is the lowest shard given nothing yet (load 0).
  const heap: [number, number][] = [];
  let fresh = 0;
  const less = (a: readonly [number, number], b: readonly [number, number]) => a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);
  const down = (i: number): void => {
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < heap.length && less(heap[l]!, heap[m]!)) m = l;
      if (r < heap.length && less(heap[r]!, heap[m]!)) m = r;
      if (m === i) return;
      [heap[i], heap[m]] = [heap[m]!, heap[i]!];
      i = m;
    }
  };
  const up = (i: number): void => {
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!less(heap[i]!, heap[p]!)) return;
      [heap[i], heap[p]] = [heap[p]!, heap[i]!];
      i = p;
    }
  };
  const mine: DatasetFile[] = [];
  for (const f of [...files].sort((a, b) => b.bytes - a.bytes || byRel(a, b))) {
    const top = heap[0];
    if (fresh < count && (!top || less([0, fresh], top))) {
      // A shard with nothing yet is the least loaded.
      if (fresh === index) mine.push(f);
      heap.push([f.bytes, fresh++]);
      up(heap.length - 1);
      continue;
    }
    if (top![1] === index) mine.push(f);
    top![0] += f.bytes;
    down(0);
  }
  return mine.sort(byRel);
}
