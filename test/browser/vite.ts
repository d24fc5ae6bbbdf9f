/**
 * Running the repository's Vite CLI on an app folder, as the package tests do (the machine is
 * offline, so an app uses the repository's Vite instead of installing its own).
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { REPO } from './pack.js';

/** The repository's Vite command-line entry. */
export const VITE_BIN = join(REPO, 'node_modules', 'vite', 'bin', 'vite.js');

/**
 * Starts a long-running `vite ...args` (the dev server, or `preview`) in `cwd` on a free port
 * and resolves with the URL it prints. The child goes into `children`, for the caller to stop.
 */
export function startVite(cwd: string, args: string[], children: ChildProcess[]): Promise<string> {
  const child = spawn(process.execPath, [VITE_BIN, ...args, '--host', '127.0.0.1', '--port', '0', '--logLevel', 'info'], {
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  return printedUrl(child, `vite ${args.join(' ')}`);
}

/** Resolves with the first http://127.0.0.1:PORT/ or http://localhost:PORT/ URL `child` prints. */
export function printedUrl(child: ChildProcess, what: string): Promise<string> {
  let out = '';
  return new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`${what} printed no URL:\n${out}`)), 30_000);
    const onData = (d: Buffer) => {
      out += d.toString();
      // Strip colours: Vite prints the URL as http://127.0.0.1:\x1b[1m5173\x1b[22m/.
      const m = /(http:\/\/(?:127\.0\.0\.1|localhost):\d+\/)/.exec(out.replace(/\x1b\[[0-9;]*m/g, ''));
      if (m) {
        clearTimeout(timer);
        ok(m[1]!);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => fail(new Error(`${what} exited with ${code}:\n${out}`)));
  });
}
