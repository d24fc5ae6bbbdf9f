/**
 * The same start for every timed run of a file benchmark: dirty pages written out (`sync`),
 * then `bytes` of memory touched and freed by a child process.
 *
 * Why the second: a virtual machine that hands the memory its guest frees back to the host
 * (virtio free page reporting, as on this project's VMs) makes the first touch of that memory
 * again cost a fault in the host — and a run that writes a new file takes fresh pages for the
 * file's cache. Which run meets pages handed back and which meets pages still in the guest was
 * luck: the same command varied 3× from run to run. Touching as much memory as the run will
 * write just before it leaves the guest's free pages in place for every run alike (they are
 * handed back only seconds after they are freed). Elsewhere it costs a moment and changes
 * nothing.
 * @module
 */
import { execFileSync } from 'node:child_process';
import { freemem } from 'node:os';

/** `sync`, then `bytes` (at most half the free memory) touched and freed by a child process. */
export function freshStart(bytes: number): void {
  execFileSync('sync');
  const n = Math.min(bytes, freemem() / 2);
  const mib = Math.max(1, Math.floor(n / 2 ** 20));
  execFileSync(process.execPath, ['-e', `const a = []; for (let m = 0; m < ${mib}; m += 256) a.push(Buffer.alloc(Math.min(256, ${mib} - m) << 20, 1));`]);
}
