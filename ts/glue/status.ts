/**
 * Turns the kernels' status codes into errors. The codes and their meanings come from the Rust
 * side (abi.ts, generated from crate/src/abi.rs). The TypeScript layer checks every argument
 * first, so a non-zero status means a bug here: the message says which check the kernel made
 * and asks for a report.
 * @module
 */
import { STATUS_TEXT } from '../generated/abi.js';

/** The meaning of kernel status `status`. */
function statusMessage(status: number): string {
  return STATUS_TEXT[status] ?? `unknown status ${status}`;
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
