/**
 * What a result array the library allocates costs: `new Float32Array(n)` (zeroed) against
 * Node's `Buffer.allocUnsafeSlow` (not zeroed), each then written in full as a call writes its
 * result. Decides platform.ts's resultArray. Run: `npm run bench:alloc`.
 * @module
 */
function median(f: () => unknown, ms = 300): number {
  const t: number[] = [];
  const t0 = performance.now();
  while (performance.now() - t0 < ms || t.length < 7) {
    const s = performance.now();
    f();
    t.push(performance.now() - s);
  }
  t.sort((a, b) => a - b);
  return t[t.length >> 1]! * 1000;
}

console.log('floats     | new Float32Array + set (µs) | allocUnsafeSlow + set (µs) | ratio');
for (const n of [896, 4096, 16384, 262144, 1 << 20, 1 << 22, 1 << 24]) {
  const src = new Float32Array(n).fill(1);
  const zeroed = median(() => new Float32Array(n).set(src));
  const unzeroed = median(() => new Float32Array(Buffer.allocUnsafeSlow(4 * n).buffer, 0, n).set(src));
  console.log(`${String(n).padEnd(10)} | ${zeroed.toFixed(1).padStart(27)} | ${unzeroed.toFixed(1).padStart(26)} | ${(zeroed / unzeroed).toFixed(2)}`);
}
