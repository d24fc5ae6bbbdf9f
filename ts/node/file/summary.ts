/**
 * What `normalizeFile` reports: the arrays normalized and copied, rows, bytes, seconds, GB/s,
 * threads, and the output's SHA-256 and scales file when there are.
 * @module
 */
import { DTYPES } from '../../glue/dtypes.js';
import type { Engine } from './normalizer.js';
import { shown, type FsPath } from '../io/paths.js';
import type { ArrayPlan } from './plan.js';
import type { NormalizeSummary } from '../types.js';

/** What {@link normalizeFile} reports. */
export function summaryOf(
  input: FsPath, output: FsPath, format: NormalizeSummary['format'], plans: readonly ArrayPlan[], rows: number,
  out: { at: number; sha256: string | undefined; scales: FsPath | undefined }, pool: Engine, t0: number,
): NormalizeSummary {
  const seconds = (performance.now() - t0) / 1000;
  const norm = plans.filter((p) => p.norm);
  const first = norm[0]!;
  const bytes = norm.reduce((s, p) => s + (p.norm!.rows ?? rows) * p.norm!.dim * DTYPES[p.norm!.inDtype].bytes, 0);
  const { sha256, scales } = out;
  return {
    input: shown(input), output: shown(output), format, dtype: first.norm!.inDtype, outDtype: first.norm!.outDtype, rows, dim: first.norm!.dim,
    shape: first.norm!.rows === null ? [rows, first.norm!.dim] : first.out.shape,
    arrays: norm.map((p) => ({ name: p.out.name, dtype: p.norm!.inDtype, outDtype: p.norm!.outDtype, shape: p.norm!.rows === null ? [rows, p.norm!.dim] : p.out.shape, rows: p.norm!.rows ?? rows, dim: p.norm!.dim })),
    copied: plans.filter((p) => !p.norm && p.scalesOf === undefined).map((p) => p.out.name),
    bytes, outputBytes: out.at, seconds, gbPerS: bytes / seconds / 1e9, threads: pool.threads,
    ...(sha256 && { sha256 }),
    ...(scales !== undefined && { scales: shown(scales) }),
  };
}
