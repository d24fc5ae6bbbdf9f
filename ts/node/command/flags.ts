/**
 * The command's flags as `node:util` parseArgs reads them: each flag once, with whether it takes
 * a value and which runs it is for. The scalar options' flags come from their table
 * (check/scalar-options.ts): `--NAME`, the option's name in kebab case.
 * @module
 */
import { SCALARS } from '../../call/check/scalar-options.js';
import { listed, QUANT_DTYPES } from '../../glue/dtypes.js';

/** The flag of option `key`: its camelCase name in kebab case (`fooBar` is `foo-bar`). */
export const flagOf = (key: string): string => key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/** Joins words that stay on one line of `--help`. */
export const NBSP = '\u00a0';

/**
 * The options besides the scalar ones that the command reads as a number from the flag of
 * their name (`--NAME V`), with the letter its value is shown by in `--help` and the help: a
 * new one is an entry here.
 */
export const NUMBER_OPTIONS: Readonly<Record<string, { readonly letter: string; readonly help: string }>> = {
  quantScale: { letter: 'S', help: `with --out-dtype ${listed(Object.keys(QUANT_DTYPES), '')}: one scale for every row (q${NBSP}=${NBSP}y${NBSP}/${NBSP}S); no scales are written` },
};

/** The options read as a number from the flag of their name: the scalar options and {@link NUMBER_OPTIONS}. */
export const NUMBER_KEYS: readonly string[] = [...Object.keys(SCALARS), ...Object.keys(NUMBER_OPTIONS)];

/** The flags parseArgs reads. */
export const FLAGS = {
  dtype: { type: 'string' },
  'out-dtype': { type: 'string' },
  'weight-dtype': { type: 'string' },
  'weight-tensor': { type: 'string' },
  tensor: { type: 'string', multiple: true },
  'casting-mode': { type: 'string' },
  weight: { type: 'string' },
  ...(Object.fromEntries(NUMBER_KEYS.map((k) => [flagOf(k), { type: 'string' }])) as Record<string, { type: 'string' }>),
  dim: { type: 'string' },
  threads: { type: 'string' },
  rstd: { type: 'string' },
  format: { type: 'string' },
  'in-place': { type: 'boolean' },
  'out-dir': { type: 'string' },
  shard: { type: 'string' },
  force: { type: 'boolean' },
  'keep-going': { type: 'boolean' },
  checksum: { type: 'boolean' },
  'no-follow-symlinks': { type: 'boolean' },
  'lock-wait': { type: 'string' },
  'lock-stale': { type: 'string' },
  verbose: { type: 'boolean' },
  progress: { type: 'string' },
  'progress-interval': { type: 'string' },
  'no-fsync': { type: 'boolean' },
  quiet: { type: 'boolean' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
} as const;

/** The flags that take a value (a value may start with '-': `--eps -1e-3`, `--offset -1`). */
export const VALUED: readonly string[] = Object.entries(FLAGS).filter(([, f]) => f.type === 'string').map(([k]) => k);

/** Flags of a dataset run only, and of a one-file run only. */
export const DATASET_ONLY = ['shard', 'force', 'keep-going', 'checksum', 'verbose', 'no-follow-symlinks', 'lock-wait', 'lock-stale'];
export const FILE_ONLY = ['rstd', 'in-place'];
