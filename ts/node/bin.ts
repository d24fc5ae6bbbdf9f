#!/usr/bin/env node
/**
 * The package's `bin`: runs the command (cli.ts) and exits with its code.
 * @module
 */
import { main } from './cli.js';

process.exit(await main(process.argv.slice(2)));
