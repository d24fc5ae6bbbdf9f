// Removes the custom sections (id 0: `name`, `producers`, `target_features`) from .wasm files,
// in place. Nothing the package does at run time reads them: `name` only labels functions in
// stack traces, and the kernels return status codes instead of trapping. A page downloads about
// 36 KiB less per build.
//
// Usage: node scripts/strip-wasm.mjs FILE.wasm...   (build.sh runs it on every build)
import { readFileSync, writeFileSync } from 'node:fs';

/** `wasm` without its custom sections (a module's sections are an id, a LEB128 size, the bytes). */
export function stripCustomSections(wasm) {
  if (wasm.readUInt32LE(0) !== 0x6d736100) throw new Error('not a WebAssembly module');
  const kept = [wasm.subarray(0, 8)];
  for (let p = 8; p < wasm.length; ) {
    const start = p;
    const id = wasm[p++];
    let size = 0;
    for (let shift = 0; ; shift += 7) {
      const b = wasm[p++];
      size += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) break;
    }
    p += size;
    if (id !== 0) kept.push(wasm.subarray(start, p));
  }
  return Buffer.concat(kept);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const f of process.argv.slice(2)) writeFileSync(f, stripCustomSections(readFileSync(f)));
}
