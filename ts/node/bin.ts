#!/usr/bin/env node
/**
 * The package's `bin`. Started by a user or a scheduler it is the supervisor (supervisor.ts):
 * it starts itself again as the process that does the work (command/main.ts) and ends with its code.
 * @module
 */
import { fileURLToPath } from 'node:url';
import { supervised } from './io/supervised.js';

const argv = process.argv.slice(2);
if (supervised()) {
  const { main } = await import('./command/main.js');
  process.exit(await main(argv));
} else {
  const { supervise } = await import('./command/supervisor.js');
  process.exit(await supervise(fileURLToPath(import.meta.url), argv));
}
