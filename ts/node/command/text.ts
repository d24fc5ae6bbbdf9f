/**
 * What the command prints: sizes and rates with fitting units, the live progress lines and the
 * summaries of a one-file and of a dataset run.
 * @module
 */
import type { DatasetProgress, DatasetSummary } from '../dataset/types.js';
import type { NormalizeProgress, NormalizeSummary } from '../types.js';

/** `n` with a decimal unit (B, kB, MB, GB) and three significant digits. */
export function decimal(n: number, unit: string): string {
  const steps = ['', 'k', 'M', 'G', 'T'];
  let i = 0;
  while (i < steps.length - 1 && Math.abs(n) >= 999.5) {
    n /= 1000;
    i++;
  }
  return `${n < 10 && i > 0 ? n.toFixed(2) : n < 100 && i > 0 ? n.toFixed(1) : n.toFixed(0)} ${steps[i]}${unit}`;
}

/** `v` rounded to `digits` significant digits (the JSON summary's seconds and rate). */
const round = (v: number, digits = 4): number => (v === 0 || !Number.isFinite(v) ? v : Number(v.toPrecision(digits)));

/** Seconds as "12.3 ms" or "1.23 s". */
function duration(seconds: number): string {
  return seconds < 0.1 ? `${(seconds * 1000).toFixed(1)} ms` : `${seconds.toFixed(2)} s`;
}

/**
 * `n` with a comma between each group of three digits (`301,250`). Not toLocaleString: its
 * first call loads the locale data, 13 ms of a run's start.
 */
const grouped = (n: number): string => (Number.isInteger(n) ? String(n).replace(/\B(?=(\d{3})+$)/g, ',') : String(n));
const count = (n: number, one: string, many = `${one}s`): string => `${grouped(n)} ${n === 1 ? one : many}`;

/** `done/total unit` of bytes, both in the total's unit: `1.23/4.56 GB`. */
function bytesDone(done: number, total: number): string {
  if (!Number.isFinite(total)) return decimal(done, 'B');
  const [t, unit] = decimal(total, 'B').split(' ') as [string, string];
  const scale = total === 0 ? 1 : total / Number(t);
  const digits = t.includes('.') ? t.split('.')[1]!.length : 0;
  return `${(done / scale).toFixed(digits)}/${t} ${unit}`;
}

/** The progress line of a one-file run: rows and bytes done of all, percent, rate, ETA. */
export function progressLine(p: NormalizeProgress): string {
  if (!Number.isFinite(p.totalRows)) return `${count(p.rows, 'row')}  ${decimal(p.bytes, 'B')}  ${decimal(p.seconds > 0 ? p.bytes / p.seconds : 0, 'B/s')}`;
  return `${grouped(p.rows)}/${grouped(p.totalRows)} rows  ${bytesDone(p.bytes, p.totalBytes)}  ${pace(p)}`;
}

/** "percent  rate  ETA" of `bytes` done out of `totalBytes` in `seconds`. */
function pace(p: { bytes: number; totalBytes: number; seconds: number }): string {
  const pct = p.totalBytes ? Math.min(100, (100 * p.bytes) / p.totalBytes) : 100;
  const rate = p.seconds > 0 ? p.bytes / p.seconds : 0;
  const eta = rate > 0 ? Math.max(0, p.totalBytes - p.bytes) / rate : 0;
  return `${pct.toFixed(1)}%  ${decimal(rate, 'B/s')}  ETA ${eta.toFixed(0)} s`;
}

/** A summary as one JSON line, its seconds and rate rounded (`--json`). */
export function jsonLine(s: { seconds: number; gbPerS: number }): string {
  return JSON.stringify({ ...s, seconds: round(s.seconds), gbPerS: round(s.gbPerS) });
}

/** The one-line summary of a one-file run. */
export function summaryLine(s: NormalizeSummary): string {
  const what =
    s.arrays.length > 1
      ? `${count(s.arrays.length, 'array')}, ${count(s.rows, 'row')}`
      : `${count(s.rows, 'row')} × ${s.dim}`;
  const dtypes = s.outDtype === s.dtype ? s.dtype : `${s.dtype} → ${s.outDtype}`;
  const copied = s.copied.length ? `; ${count(s.copied.length, 'array')} copied as ${s.copied.length === 1 ? 'it is' : 'they are'}` : '';
  return (
    `normalized ${what} (${dtypes}, ${decimal(s.bytes, 'B')}) in ${duration(s.seconds)}: ` +
    `${decimal(s.gbPerS * 1e9, 'B/s')} on ${count(s.threads, 'thread')}${copied} → ${s.output}${s.scales !== undefined ? ` (scales: ${s.scales})` : ''}`
  );
}

/**
 * The progress line of a dataset run: files done of all, bytes written of all and rows (the
 * files in flight included), percent, rate, ETA.
 */
export function datasetProgressLine(p: DatasetProgress): string {
  return `${p.files}/${p.totalFiles} files  ${bytesDone(p.bytes, p.totalBytes)}  ${count(p.rows, 'row')}  ${pace(p)}`;
}

/** A progress line for a log (not a terminal): its time, then what the live line says. */
export function logLine(line: string, seconds: number): string {
  return `rmsnorm-wasm: progress after ${duration(seconds)}: ${line.replace(/ {2,}/g, ', ')}`;
}

/** The one-line summary of a dataset run. */
export function datasetSummaryLine(s: DatasetSummary, outDir: string): string {
  if (s.written === 0 && s.failed.length === 0) return `nothing to do: ${s.skipped} of ${count(s.files, 'file')} already done → ${outDir}`;
  const rest = [`${s.skipped} already done`, ...(s.failed.length ? [`${s.failed.length} failed`] : [])].join(', ');
  return (
    `normalized ${count(s.written, 'file')} of ${s.files} (${count(s.rows, 'row')}, ${decimal(s.bytes, 'B')}) in ${duration(s.seconds)}: ` +
    `${decimal(s.gbPerS * 1e9, 'B/s')} on ${count(s.threads, 'thread')}; ${rest} → ${outDir}`
  );
}
