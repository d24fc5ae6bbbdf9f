/**
 * What users read stays true and speaks to them: docs/benchmarks.md is what the committed
 * results make (no figure typed by hand), and the pages, results and command output a user
 * reads carry no project-internal vocabulary (issue numbers, targets and verdicts, session
 * history, test hooks).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BENCHMARKS_MD, README_MD, readmeWithResults, renderBenchmarks } from '../bench/docs.js';

const REPO = fileURLToPath(new URL('..', import.meta.url));

describe('docs/benchmarks.md', () => {
  it('is what bench/docs.ts makes from the committed bench/results/*.json', () => {
    expect(readFileSync(BENCHMARKS_MD, 'utf8')).toBe(renderBenchmarks());
  });

  it("the README's results table is what the committed results make", () => {
    const readme = readFileSync(README_MD, 'utf8');
    expect(readme).toContain('<!-- results:start');
    expect(readme).toBe(readmeWithResults(readme));
  });

  it('shows every shape of the Node run with its default call and plain-JS times', () => {
    const page = readFileSync(BENCHMARKS_MD, 'utf8');
    const run = JSON.parse(readFileSync(new URL('../bench/results/latest.json', import.meta.url), 'utf8')) as { shapes: string[] };
    for (const s of run.shapes) expect(page).toContain(`| ${s.replace('x', ' × ')} |`);
  });
});

/** Words that belong to the project's own history and goals, not to a user's page. */
const INTERNAL = [
  /\bissue\s*#?\d+/i,
  /\bissues?'s? (target|goal)s?/i,
  /\bMISSED\b/,
  /\b(target|goal)s? (met|missed)\b/i,
  /load average/i,
  /\b(this|earlier|between|previous|last) sessions?\b/i,
  /\bforceWay\b|\bpoolHooks\b|TEST_HOOKS/,
  /the seeds'/i,
];

/** The user-facing files this test reads. */
const FILES = [
  'README.md',
  ...readdirSync(new URL('../docs/', import.meta.url)).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`),
  ...readdirSync(new URL('../bench/results/', import.meta.url)).filter((f) => f.endsWith('.json')).map((f) => `bench/results/${f}`),
];

describe('no internal vocabulary where users read', () => {
  it.each(FILES)('%s', (f) => {
    const text = readFileSync(new URL(`../${f}`, import.meta.url), 'utf8');
    for (const re of INTERNAL) expect(text, `${f} matches ${re}`).not.toMatch(re);
  });

  it('the command: --help and a usage error', () => {
    const bin = fileURLToPath(new URL('../dist/node/bin.js', import.meta.url));
    const help = execFileSync(process.execPath, [bin, '--help'], { cwd: REPO, encoding: 'utf8' });
    let usage = '';
    try {
      execFileSync(process.execPath, [bin, 'normalize'], { cwd: REPO, encoding: 'utf8', stdio: 'pipe' });
    } catch (e) {
      usage = String((e as { stderr?: string }).stderr);
    }
    expect(usage).toMatch(/see rmsnorm-wasm --help/);
    for (const re of INTERNAL) expect(help + usage).not.toMatch(re);
  });
});
