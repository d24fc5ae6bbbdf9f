/**
 * Small helpers for tests of errors.
 * @module
 */

/** Runs `call`, which must throw: returns the error (fails the test if it returns). */
export function thrown(call: () => unknown): Error {
  try {
    call();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected the call to throw, it returned');
}

/** Awaits `p`, which must reject: returns the reason (fails the test if it resolves). */
export async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected the promise to reject, it resolved');
}
