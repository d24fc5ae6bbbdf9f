import { spawnSync } from 'node:child_process';
import { defineConfig } from 'vitest/config';
import { relaxedSimdSupported } from './ts/glue/platform.js';

/**
 * Node flags that give the test processes relaxed SIMD, so that the `simd-relaxed` builds are
 * tested (and are what init() picks, as for users of Node 22+): none where Node has it, V8's
 * flag on Node 20, which has it only behind that flag.
 */
function relaxedSimdArgs(): string[] {
  if (relaxedSimdSupported()) return [];
  const flag = '--experimental-wasm-relaxed-simd';
  const probe = spawnSync(process.execPath, [flag, '-e', ''], { stdio: 'ignore' });
  return probe.status === 0 ? [flag] : [];
}

// One config for every suite: the sync API (test/*.test.ts), the worker pool (test/pool*.test.ts)
// and the browser runs (test/browser/*.test.ts). Tests import the built package (dist/, wasm/),
// so `npm run build` must have run first (`npm test` does it).
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Long rows (65536 floats) on the scalar build and the 3000-call memory loops take a few
    // seconds on a slow 2-core machine; 60 s leaves room without hiding a hang for long.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Each file in its own process: init() is global per module instance, and a file that grows
    // wasm memory or loads other builds must not disturb another file's measurements.
    pool: 'forks',
    execArgv: relaxedSimdArgs(),
  },
});
