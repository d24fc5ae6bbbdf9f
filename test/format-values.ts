/**
 * The values the format fixtures hold (test/fixtures/formats, written by
 * scripts/make-format-fixtures.py): element `i` is `((i · 37) mod 101 − 50) / 16`, exact in
 * every float dtype the fixtures use.
 */
export const value = (i: number): number => (((i * 37) % 101) - 50) / 16;

/** The first `n` of them. */
export const values = (n: number): Float64Array => Float64Array.from({ length: n }, (_, i) => value(i));
