/**
 * The command's flags as `node:util` parseArgs reads them: each flag once, with whether it takes
 * a value and which runs it is for. The scalar options' flags come from their table
 * (check/scalar-options.ts): `--NAME`, the option's name in kebab case.
 * @module
 */
import { SCALARS } from '../call/check/scalar-options.js';

/** The flag of option `key`: its camelCase name in kebab case (`fooBar` is `foo-bar`). */
export const flagOf = (key: string): string => key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/** The flags parseArgs reads. */
export const FLAGS = {
  dtype: { type: 'string' },
  'out-dtype': { type: 'string' },
  'quant-scale': { type: 'string' },
  'weight-dtype': { type: 'string' },
  'weight-tensor': { type: 'string' },
  tensor: { type: 'string', multiple: true },
  'casting-mode': { type: 'string' },
  weight: { type: 'string' },
  ...(Object.fromEntries(Object.keys(SCALARS).map((k) => [flagOf(k), { type: 'string' }])) as Record<string, { type: 'string' }>),
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
