/**
 * `npm run demo`: serves the demo page on http://localhost:<port>/demo/ with COOP/COEP.
 *
 *   npm run demo                      port 5180, cross-origin isolated (pool in threads mode)
 *   npm run demo -- --port 8000
 *   npm run demo -- --no-isolation    without COOP/COEP (pool in single mode)
 *
 * Ctrl-C stops it. Serves the repository root on loopback only (the page imports ../dist).
 * @module
 */
import { parseArgs } from 'node:util';
import { startDemoServer } from './server.js';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: process.env.PORT ?? '5180' },
    'no-isolation': { type: 'boolean', default: false },
  },
});
const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`--port must be an integer 0…65535, got ${values.port}`);
  process.exit(2);
}
const isolated = !values['no-isolation'];
const server = await startDemoServer({ port, isolated });
console.log(`rmsnorm-wasm demo: http://localhost:${server.port}/demo/`);
console.log(isolated ? 'COOP/COEP headers on: cross-origin isolated, pool in threads mode.' : 'COOP/COEP headers off: pool in single mode.');
console.log('Ctrl-C to stop.');
const stop = () => server.close().then(() => process.exit(0));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
