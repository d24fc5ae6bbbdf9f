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
import { BENCHMARKS_MD, PERFORMANCE_MD, performanceWithOneOff, README_MD, readmeWithResults, renderBenchmarks } from '../bench/docs.js';
import { CSP, ISOLATION_HEADERS, MIME } from '../demo/static-server.js';

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

  it("docs/performance.md's section on the one-off call in a page is what the committed results make", () => {
    const md = readFileSync(PERFORMANCE_MD, 'utf8');
    expect(md).toContain('<!-- one-off:start');
    expect(md).toBe(performanceWithOneOff(md));
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
  ...readdirSync(new URL('../examples/', import.meta.url), { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.(mjs|js|html|json)$/.test(f))
    .map((f) => `examples/${f}`),
];

describe('no internal vocabulary where users read', () => {
  it.each(FILES)('%s', (f) => {
    const text = readFileSync(new URL(`../${f}`, import.meta.url), 'utf8');
    for (const re of INTERNAL) expect(text, `${f} matches ${re}`).not.toMatch(re);
  });

  it('the command: --help and a usage error', () => {
    const bin = fileURLToPath(new URL('../bundle/node/bin.js', import.meta.url));
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

/**
 * Every paragraph a user reads ends as a sentence does: a paragraph (or the last item of a list
 * whose other items end with a period) that stops mid-sentence is text cut by an edit.
 */
describe('no paragraph stops mid-sentence', () => {
  const pages = FILES.filter((f) => f.endsWith('.md'));
  it.each(pages)('%s', (f) => {
    const text = readFileSync(new URL(`../${f}`, import.meta.url), 'utf8')
      .replace(/^```[\s\S]*?^```/gm, '')
      .replace(/<!--[\s\S]*?-->/g, '');
    const ends = (line: string) => /[.:!?)`]$|\*\*$/.test(line.trim());
    for (const para of text.split(/\n\s*\n/)) {
      const lines = para.trim().split('\n');
      const last = lines[lines.length - 1]!.trim();
      if (!last || /^(#|\||<|!\[)/.test(last)) continue;
      const items = para.split(/\n(?=\s*(?:[-*]|\d+\.) )/).map((i) => i.trim());
      const isList = /^(?:[-*]|\d+\.) /.test(items[0]!);
      // A list of fragments (links with a few words each) ends none of its items with a period.
      if (isList && !items.some((i) => /[.!?]$/.test(i))) continue;
      expect(ends(last), `${f}: a paragraph stops at "…${last.slice(-60)}"`).toBe(true);
    }
  });
});

/**
 * The configuration blocks of docs/web-app.md cannot be run here (no nginx, Apache or hosting
 * service), so each is compared with what the tests do run: the Vite config is the Vite
 * example's file, and every server's headers are those the browser tests serve pages with.
 */
describe('the configuration blocks of docs/web-app.md', () => {
  const page = readFileSync(new URL('../docs/web-app.md', import.meta.url), 'utf8');
  const block = (lang: string, starting: string): string => {
    const found = [...page.matchAll(/^```(\w*)\n([\s\S]*?)^```/gm)].filter((m) => m[1] === lang && m[2]!.startsWith(starting));
    expect(found, `one ${lang || 'plain'} block starting ${starting}`).toHaveLength(1);
    return found[0]![2]!;
  };
  const pairs = (text: string, re: RegExp) => Object.fromEntries([...text.matchAll(re)].map((m) => [m[1], m[2]]));

  it('the Vite config is examples/vite-app/vite.config.js', () => {
    expect(block('js', "import { defineConfig } from 'vite';")).toBe(readFileSync(new URL('../examples/vite-app/vite.config.js', import.meta.url), 'utf8'));
  });

  it('the header lists, nginx, Apache and _headers send the headers the tests use, .wasm as application/wasm', () => {
    expect(pairs(block('', 'Cross-Origin-Opener-Policy'), /^(\S+): (.+)$/gm)).toEqual(ISOLATION_HEADERS);
    const nginx = block('nginx', 'location');
    expect(pairs(nginx, /add_header (\S+) "([^"]+)"/g)).toEqual(ISOLATION_HEADERS);
    expect(nginx).toContain(`${MIME['.wasm']} wasm;`);
    const apache = block('apache', 'Header');
    expect(pairs(apache, /Header always set (\S+) "([^"]+)"/g)).toEqual(ISOLATION_HEADERS);
    expect(apache).toContain(`AddType ${MIME['.wasm']} .wasm`);
    expect(pairs(block('', '/*'), /^\s+(\S+): (.+)$/gm)).toEqual(ISOLATION_HEADERS);
  });

  it('the Content-Security-Policy is the one the isolated test pages are served under', () => {
    expect(block('', 'Content-Security-Policy').trim()).toBe(`Content-Security-Policy: ${CSP}`);
  });
});
