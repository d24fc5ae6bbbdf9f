/**
 * The kernels' status codes (crate/src/bindings.rs) turned into messages, in one table. The
 * TypeScript layer checks every argument first, so a non-zero status means a bug here: the
 * message says which check the kernel made and asks for a report.
 * @module
 */

/** Status code → what the kernel's bounds check found (codes as in bindings.rs). */
const MESSAGES: Readonly<Record<number, string>> = {
  1: 'dim is zero',
  2: 'a required address is 0',
  3: 'an address is not a multiple of 4',
  4: 'a range runs past the end of wasm memory, or its size overflows',
  5: 'a row range is reversed, past the end, or a pool shard does not start on a dweight block',
  6: 'stat (the elements rstd is estimated from) is 0 or more than dim',
};

/** The message for kernel status `status` (non-zero). */
export function statusMessage(status: number): string {
  return MESSAGES[status] ?? `unknown status ${status}`;
}

/** Throws when a kernel returned a non-zero status; `fn` names the call. */
export function checkStatus(fn: string, status: number): void {
  if (status !== 0) {
    throw new Error(
      `${fn}: the wasm kernel refused its arguments (status ${status}: ${statusMessage(status)}); ` +
        'this is a bug in rmsnorm-wasm, please report it',
    );
  }
}
