/**
 * The one writer of a benchmark run's results, for `npm run bench` (Node) and
 * `npm run bench:browser` (one file per engine): the JSON every table, chart and page of docs is
 * generated from (bench/docs.ts), with the comparisons, the LayerNorm savings and the summary
 * derived from its rows (bench/report.ts), the tolerance the checks used and the bytes each
 * operation moves per element, and its chart beside it (bench/svg.ts).
 * @module
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ATOL, RTOL } from '../shared/reference.js';
import { comparisons, derive, layerNormSavings, summary } from './report.js';
import { BYTES_PER_ELEM } from './runner.js';
import { renderSvg } from './svg.js';
import type { Row, Shape } from './types.js';
import { shapeName } from './data.js';

/** What a run says about itself besides its rows; the writer adds what it derives. */
export interface RunFacts {
  machine: object;
  node: string;
  /** V8's version where the bench ran in Node; null in a page, which cannot see it. */
  v8: string | null;
  /** Where the reference was computed, for the tolerance's note. */
  reference: string;
  date: string;
  quick: boolean;
  durationS: number;
  /** Per shape, how it was timed. */
  timing: Record<string, object>;
  notes: string[];
  /** Further top-level fields (the builds, the browser, the cold start), written as given. */
  extra: Record<string, unknown>;
}

/**
 * Derives the rows' columns, writes `${name}.json` and `${name}.svg` into `dir` (the chart
 * titled `title`, `subtitle`), and returns the summary text.
 */
export function writeRun(dir: string, name: string, shapes: Shape[], rows: Row[], facts: RunFacts, title: string, subtitle: string): string {
  derive(rows);
  const cs = comparisons(rows, shapes);
  const ln = layerNormSavings(rows, shapes);
  const text = summary(rows, cs, ln, facts.notes);
  const shapeNames = shapes.map(shapeName);
  const json = {
    machine: facts.machine,
    node: facts.node,
    v8: facts.v8,
    ...facts.extra,
    date: facts.date,
    quick: facts.quick,
    shapes: shapeNames,
    durationS: facts.durationS,
    tolerance: { atol: ATOL, rtol: RTOL, reference: facts.reference },
    bytesPerElem: BYTES_PER_ELEM,
    timing: facts.timing,
    notes: facts.notes,
    comparisons: cs,
    layerNormSavings: ln,
    summary: text,
    rows,
  };
  // Infinity (a failed check's error) has no JSON form: write it as a string.
  const replacer = (_k: string, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v);
  writeFileSync(join(dir, `${name}.json`), JSON.stringify(json, replacer, 1) + '\n');
  writeFileSync(join(dir, `${name}.svg`), renderSvg(rows, shapeNames, title, subtitle));
  return text;
}
