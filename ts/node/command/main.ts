/**
 * The `rmsnorm-wasm` command (bin.ts runs it): `rmsnorm-wasm normalize IN OUT [options]` (see {@link USAGE}),
 * a thin shell over {@link normalizeFile} and {@link normalizeDataset}: argument parsing, a
 * progress line (live on a terminal, at an interval in a log), the summary, warnings, exit
 * codes (exit-codes.ts), and signals. It runs as the supervised work process (supervisor.ts
 * prints the stop message and removes what a stopped run left).
 * @module
 */
import { fstatSync, readFileSync, statSync } from 'node:fs';
import { clearLine, cursorTo } from 'node:readline';
import { normalizeFile } from '../file/normalize-file.js';
import { normalizeDataset } from '../dataset/run.js';
import { checkRun } from '../dataset/args.js';
import { checkFileOptions, FILE_KEYS } from '../file/options.js';
import { shown } from '../io/paths.js';
import { removeLiveTemps } from '../io/atomic.js';
import { onSupervisorGone, SIGNAL_SLOT, supervised, tell } from '../io/supervised.js';
import { bySignal, EXIT, STOPS } from '../exit-codes.js';
import { asFlags, parseCommand, SEE_HELP, UsageError, type Command } from './args.js';
import { USAGE } from './usage.js';
import { packageJsonUrl } from '../../entries.js';
import { datasetProgressLine, datasetSummaryLine, jsonLine, logLine, progressLine, summaryLine } from './text.js';
import type { NormalizeDatasetOptions } from '../dataset/types.js';
import type { NormalizeFileOptions } from '../types.js';

function version(): string {
  const pkg = JSON.parse(readFileSync(packageJsonUrl(), 'utf8')) as { version: string };
  return pkg.version;
}

/** Clears the live progress line. */
function clearStatus(): void {
  cursorTo(process.stderr, 0);
  clearLine(process.stderr, 0);
}

/** What the command says when stopped by `sig`. */
function stoppedMessage(cmd: Command, sig: string): string {
  return cmd.outDir === undefined
    ? `rmsnorm-wasm: stopped by ${sig}; no output was written${cmd.output === '-' || cmd.output?.startsWith('/dev/') ? ' in place of a file (what went to a stream stays written)' : ''}\n`
    : `rmsnorm-wasm: stopped by ${sig}; the outputs completed so far are kept and recorded: run the same command again to resume\n`;
}


/** Runs a parsed command; `out` takes what goes to standard output (stderr when OUT is `-`). */
async function run(cmd: Command, signal: AbortSignal, out: NodeJS.WriteStream): Promise<number> {
  let mode = cmd.quiet ? 'none' : cmd.progress === 'auto' ? (cmd.json ? 'none' : process.stderr.isTTY ? 'tty' : 'log') : cmd.progress;
  if (mode === 'tty' && process.stderr.isTTY !== true) {
    process.stderr.write('rmsnorm-wasm: warning: --progress tty, but standard error is not a terminal: progress is written as log lines instead\n');
    mode = 'log';
  }
  const tty = mode === 'tty';
  let lastLog = performance.now();
  const live = (line: string, seconds: number): void => {
    if (mode === 'log') {
      // A line at an interval: what a scheduler's log (kubectl logs, a Slurm output file) can follow.
      if (performance.now() - lastLog < cmd.progressInterval * 1000) return;
      lastLog = performance.now();
      process.stderr.write(logLine(line, seconds) + '\n');
      return;
    }
    if (!tty) return;
    cursorTo(process.stderr, 0);
    process.stderr.write(line);
    clearLine(process.stderr, 1);
  };
  const showing = mode === 'log' || tty;
  const say = (line: string) => {
    if (tty) clearStatus();
    process.stderr.write(line);
  };
  if (cmd.outDir !== undefined) {
    const s = await normalizeDataset(cmd.inputs, cmd.outDir, {
      ...cmd.options, signal,
      onProgress: showing ? (p) => live(datasetProgressLine(p), p.seconds) : undefined,
      onWarning: cmd.quiet ? undefined : (m) => say(`rmsnorm-wasm: warning: ${asFlags(m)}\n`),
      onFile: cmd.verbose ? (e) => say(e.status === 'failed' ? `failed  ${asFlags(e.error.message)}\n` : `${e.status} ${e.record.output}\n`) : undefined,
    } as NormalizeDatasetOptions);
    if (tty) clearStatus();
    if (cmd.json) out.write(jsonLine(s) + '\n');
    else if (!cmd.quiet) out.write(datasetSummaryLine(s, cmd.outDir) + '\n');
    for (const f of s.failed) process.stderr.write(`rmsnorm-wasm: failed: ${asFlags(f.error)}\n`);
    return s.failed.length ? EXIT.failed.code : EXIT.done.code;
  }
  const summary = await normalizeFile(cmd.inputs[0]!, cmd.output!, {
    ...cmd.options, signal,
    onProgress: showing ? (p) => live(progressLine(p), p.seconds) : undefined,
  } as NormalizeFileOptions);
  if (tty) clearStatus();
  if (cmd.json) out.write(jsonLine(summary) + '\n');
  else if (!cmd.quiet) out.write(summaryLine(summary) + '\n');
  return EXIT.done.code;
}

/** Whether `output` is this process's standard output, by whatever path (`-`, `/dev/stdout`, a link, the file it was redirected to). */
function writesStdout(output: string | undefined): boolean {
  if (output === undefined) return false;
  if (output === '-') return true;
  try {
    const [a, b] = [fstatSync(1), statSync(output)];
    return a.dev === b.dev && a.ino === b.ino;
  } catch {
    return false;
  }
}

/** Schedulers that stop a job with SIGTERM, by the variable they set in its environment. */
const SCHEDULERS: readonly (readonly [string, string])[] = [
  ['SLURM_JOB_ID', 'Slurm'],
  ['PBS_JOBID', 'PBS'],
  ['LSB_JOBID', 'LSF'],
  ['KUBERNETES_SERVICE_HOST', 'Kubernetes'],
];

/**
 * How npm started this process (`npm exec`, `npm run`: npm's title for itself), if npm is its
 * parent or the parent of the shell that started it; read from /proc, so null elsewhere.
 */
function npmParent(): string | null {
  let pid = process.ppid;
  // Above this process: its supervisor (when it has one), then npm or a shell npm started.
  for (let up = 0; up < (supervised() ? 3 : 2) && pid > 1; up++) {
    try {
      const title = readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').filter(Boolean).join(' ');
      const m = /^(npm|npx) ?(\w*)/.exec(title) ?? (/(npm|npx)-cli\.js (\w*)/.exec(title));
      if (m) return `${m[1]} ${m[2]}`.trim();
      const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
      pid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    } catch {
      return null;
    }
  }
  return null;
}

/**
 * The warning for a command started by npm (`npx`, `npm exec`, `npm run`) under a scheduler,
 * whose stop signal then reaches npm and may not reach the command; null otherwise.
 */
function schedulerWarning(env: NodeJS.ProcessEnv, parent: () => string | null = npmParent): string | null {
  const found = SCHEDULERS.find(([v]) => env[v]);
  const npm = found && parent();
  if (!found || !npm) return null;
  return (
    `started through npm (${npm}) under ${found[1]} (${found[0]} is set): the scheduler's stop signal may reach npm and not ` +
    `this command, which would then run on after its job; start node_modules/.bin/rmsnorm-wasm (with exec in a script) instead`
  );
}

/** Runs the command with `argv` (without node and the script); resolves to the exit code. */
export async function main(argv: string[]): Promise<number> {
  let cmd: Command;
  try {
    cmd = parseCommand(argv);
    // Every option checked once, before anything is read or made: a bad value is a usage error.
    if (!cmd.help && !cmd.version) {
      if (cmd.outDir !== undefined) checkRun(cmd.inputs, cmd.outDir, cmd.options);
      else checkFileOptions('normalizeFile', cmd.options, FILE_KEYS);
    }
  } catch (e) {
    if (e instanceof TypeError || e instanceof RangeError) {
      process.stderr.write(`rmsnorm-wasm: ${asFlags((e as Error).message)} ${SEE_HELP}\n`);
      return EXIT.usage.code;
    }
    process.stderr.write(`rmsnorm-wasm: ${(e as Error).message} ${SEE_HELP}\n`);
    return EXIT.usage.code;
  }
  if (cmd.help) {
    process.stdout.write(USAGE + '\n');
    return EXIT.done.code;
  }
  if (cmd.version) {
    process.stdout.write(version() + '\n');
    return EXIT.done.code;
  }
  const warning = schedulerWarning(process.env);
  if (warning && !cmd.quiet) process.stderr.write(`rmsnorm-wasm: warning: ${warning}\n`);
  const ac = new AbortController();
  let stoppedBy: (typeof STOPS)[number] | null = null;
  // The supervisor prints the stop message once this process is gone (and removes what it left).
  tell({ stopText: stoppedMessage(cmd, SIGNAL_SLOT) });
  const handlers = STOPS.map((sig) => {
    const h = () => {
      if (stoppedBy) return;
      stoppedBy = sig;
      tell({ stoppedBy: sig });
      ac.abort(new Error(`stopped by ${sig}`));
    };
    process.on(sig, h);
    return [sig, h] as const;
  });
  // Orphaned (the supervisor killed outright): the lock names a dead process and may be taken
  // over at once, so the run commits nothing more (its fence says so) and ends itself at once.
  // Its temporaries it removes itself (a later run removes any made since: their pid is dead).
  onSupervisorGone(() => {
    removeLiveTemps();
    process.kill(process.pid, 'SIGKILL');
  });
  try {
    // The summary must not mix with data written to standard output.
    return await run(cmd, ac.signal, writesStdout(cmd.output) ? process.stderr : process.stdout);
  } catch (e) {
    if (process.stderr.isTTY) clearStatus();
    if (stoppedBy) {
      if (!supervised()) process.stderr.write(stoppedMessage(cmd, stoppedBy));
      return bySignal(stoppedBy);
    }
    // The library's own messages may start with its name: the command says it once.
    const msg = ((e as Error).message ?? String(e)).replace(/^rmsnorm-wasm: /, '');
    // A dataset run's own TypeError or RangeError (its files' are failures naming them) is an
    // option its inputs cannot take, found before anything was made: a usage error too.
    if (e instanceof UsageError || (cmd.outDir !== undefined && (e instanceof TypeError || e instanceof RangeError))) {
      process.stderr.write(`rmsnorm-wasm: ${asFlags(msg)} ${SEE_HELP}\n`);
      return EXIT.usage.code;
    }
    // Bad files and failed runs (the options were checked before the run: an argument error now
    // is one a file's content made, such as a weight that does not fit its rows): a message
    // naming the file, never a stack trace.
    const fromFile = cmd.outDir === undefined && (e instanceof TypeError || e instanceof RangeError);
    const named = fromFile ? `${shown(cmd.inputs[0]!)}: ${asFlags(msg)}` : asFlags(msg);
    process.stderr.write(`rmsnorm-wasm: error: ${named}\n`);
    return (e as { code?: string }).code === 'EBUSY' ? EXIT.busy.code : EXIT.failed.code;
  } finally {
    for (const [sig, h] of handlers) process.off(sig, h);
  }
}
