/**
 * Child-process entry for the onnxruntime contenders (onnxruntime-web fixes its thread count
 * at first use, so each configuration gets its own process; onnxruntime-node runs in one too,
 * so neither's thread pool spins next to the main process's timings).
 *
 * Usage (done by ort-launch.ts): `node --import tsx bench/ort-child.ts '<json spec>'`.
 * Writes its rows as JSON to `spec.out`.
 * @module
 */
import { writeFileSync } from 'node:fs';
import { ortNode, ortWeb } from './contenders/ort.js';
import { caseReference, makeCase } from '../shared/reference.js';
import { shapeName } from './data.js';
import { benchFor, measure, timingFor } from './runner.js';
import type { OrtChildSpec } from './ort-launch.js';
import type { Row } from './types.js';
import { progressLine } from './report.js';

const spec = JSON.parse(process.argv[2] ?? '{}') as OrtChildSpec;
const contenders = spec.engine === 'web' ? await ortWeb(spec.threads) : await ortNode(spec.threads);
const rows: Row[] = [];
for (const s of spec.shapes) {
  const c = makeCase(s);
  const ref = caseReference(c);
  const bench = benchFor(s, timingFor(s, spec.quick));
  for (const k of contenders) {
    const row = await measure(bench, k, c, ref);
    process.stderr.write(progressLine(row) + '\n');
    rows.push(row);
  }
  if (!spec.quick) process.stderr.write(`  (${shapeName(s)} done)\n`);
}
writeFileSync(spec.out, JSON.stringify(rows));
// onnxruntime-web's worker threads would keep the process alive.
process.exit(0);
