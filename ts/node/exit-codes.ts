/**
 * The command's exit codes, each once with what it means: `--help` and docs/files.md list them
 * from here, and the command and its supervisor exit with them. No imports: the supervisor,
 * which loads nothing of the package, reads it too.
 * @module
 */

/** The exit codes a run ends with by itself, and what each means. */
export const EXIT = {
  done: { code: 0, means: 'done' },
  failed: { code: 1, means: 'a bad file or a failed run (the message names the file)' },
  usage: { code: 2, means: 'bad usage or a bad option value, found before anything is read or made' },
  busy: { code: 75, means: "another run holds the shard (--lock-wait ran out, or it took this run's lock over)" },
} as const;

/** The signals that stop a run: Ctrl-C (INT), what Kubernetes and Slurm send first (TERM), a closed terminal (HUP). */
export const STOPS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** Signal numbers (Linux, and every POSIX system for these): a run ended by one exits 128 + it. */
const NUMBERS: Readonly<Record<string, number>> = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };

/** The exit code of a run ended by signal `sig` (stopped by it, or its work process killed by it): 128 + its number. */
export const bySignal = (sig: string): number => 128 + (NUMBERS[sig] ?? 0);

/** `a, b or c`, its words kept on one line of a wrapped text (no-break spaces). */
const together = (words: readonly (string | number)[]): string => words.join(', ').replace(/, (?=[^,]*$)/, ' or ').replaceAll(' ', '\u00a0');

/** What a stop and a killed work process exit with, in words (after the codes of {@link EXIT}). */
const SIGNAL_EXITS =
  `${together(STOPS.map(bySignal))}\u00a0stopped\u00a0by\u00a0${together(STOPS)}, ` +
  'within a quarter of a second whatever pid the command has (PID 1 of a container too): temporary files are removed, and with --out-dir the ' +
  'outputs completed so far are kept and recorded (run the same command again to resume); ' +
  `${bySignal('SIGKILL')} the work process was killed (out of memory?), its temporary files removed`;

/** Every exit code with what it means, as one paragraph (`--help`, docs/files.md), its no-break spaces for the wrapping of `--help`. */
export const EXIT_CODES_TEXT = `Exit codes: ${Object.values(EXIT).map((e) => `${e.code} ${e.means}`).join('; ')}; ${SIGNAL_EXITS}.`;
