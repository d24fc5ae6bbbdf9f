/**
 * The command's work process run alone, without the supervisor the command starts it under
 * (ts/node/supervisor.ts): for a test that must see what that process itself leaves when killed
 * at a chosen moment (a wrapper such as strace in front of it), with nothing cleaning up after
 * it. A shell stands in for the supervisor: the process finds the channel variable naming its
 * parent, and descriptor 3 is a pipe the test holds.
 */
import { spawnSync } from 'node:child_process';
import { CHANNEL_ENV } from '../ts/node/io/supervised.js';

const BIN = new URL('../bundle/node/bin.js', import.meta.url).pathname;

/** Runs `wrapper... node bin.js args` as the work process (see the module doc); `wrapper` must exec its command (strace does). */
export function runWorkProcess(args: readonly string[], o: { wrapper?: readonly string[]; env?: Record<string, string>; input?: Buffer } = {}) {
  const r = spawnSync('sh', ['-c', `exec env ${CHANNEL_ENV}=3:$$ "$@"`, 'sh', ...(o.wrapper ?? []), process.execPath, BIN, ...args], {
    input: o.input, env: { ...process.env, ...o.env }, timeout: 120_000, stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
  });
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr.toString() };
}
