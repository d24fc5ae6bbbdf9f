/**
 * `npm run bench:size`: what a page downloads, per wasm build of the package: the .wasm file and
 * its JavaScript glue, raw and gzip-compressed (level 9, what a server's static compression
 * gives at most). Writes bench/results/size.json and regenerates docs/benchmarks.md.
 * @module
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { BUILDS } from '../ts/load.js';
import { writeBenchmarks } from './docs.js';

const WASM = new URL('../wasm/', import.meta.url);

/** Bytes of one file, raw and gzipped. */
function sizeOf(path: URL): { bytes: number; gzipBytes: number } {
  const b = readFileSync(path);
  return { bytes: b.length, gzipBytes: gzipSync(b, { level: 9 }).length };
}

/** Per build: the module and the glue, raw and gzipped. */
export function buildSizes(): Record<string, { wasm: { bytes: number; gzipBytes: number }; glue: { bytes: number; gzipBytes: number } }> {
  return Object.fromEntries(
    BUILDS.map((b) => [b, { wasm: sizeOf(new URL(`${b}/rmsnorm_wasm_bg.wasm`, WASM)), glue: sizeOf(new URL(`${b}/rmsnorm_wasm.js`, WASM)) }]),
  );
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const builds = buildSizes();
  const out = fileURLToPath(new URL('results/size.json', import.meta.url));
  writeFileSync(out, JSON.stringify({ date: new Date().toISOString(), builds }, null, 2) + '\n');
  for (const [b, s] of Object.entries(builds)) {
    process.stdout.write(`${b.padEnd(22)} wasm ${(s.wasm.bytes / 1024).toFixed(0).padStart(5)} KiB, gzip ${(s.wasm.gzipBytes / 1024).toFixed(0).padStart(4)} KiB; glue gzip ${(s.glue.gzipBytes / 1024).toFixed(1)} KiB\n`);
  }
  writeBenchmarks();
  process.stderr.write(`wrote ${out} and docs/benchmarks.md\n`);
}
