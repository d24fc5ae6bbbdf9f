/**
 * The instance the top-level functions run on: the one {@link init} loaded (default-instance.ts
 * sets it; the generated top-level functions and default-instance.ts's read it).
 * @module
 */
import type { RmsNorm } from '../rmsnorm.js';

let loaded: RmsNorm | null = null;

/** Makes `rn` the instance the top-level functions run on. */
export function setCurrent(rn: RmsNorm): void {
  loaded = rn;
}

/** The instance init() loaded, or null before it resolves. */
export const current = (): RmsNorm | null => loaded;

/** The instance, for the top-level function `fn`; an Error saying to call init() first before it has resolved. */
export function ready(fn: string): RmsNorm {
  if (!loaded) throw new Error(`${fn}: rmsnorm-wasm is not initialized; call and await init() first`);
  return loaded;
}
