// Runs fixtures/engine-checks.js under whichever engine runs this file (Node, Bun or Deno) on the
// built package (dist/, wasm/) and prints the summary as one line of JSON. `--no-pool` skips the pool.
import * as lib from '../../bundle/index.js';
import { engineChecks } from '../browser/fixtures/engine-checks.js';

const args = globalThis.Deno ? globalThis.Deno.args : process.argv.slice(2);
const summary = await engineChecks(lib, { pool: !args.includes('--no-pool'), threads: 2 });
console.log(JSON.stringify(summary));
