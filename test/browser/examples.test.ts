/**
 * The browser examples and the HTML blocks of the README and docs/, run as a user would run
 * them, from the packed tarball, in every engine (demo/engines.ts): Chromium, Firefox, and
 * WebKit both with the shared memory Safari gives isolated pages and without it:
 *   - examples/plain-page: `npm install` of the tarball into a copy of the folder, `node
 *     serve.mjs`, the page loaded with and without the COOP/COEP headers. The page checks its
 *     own results against float64 and prints the largest error of each call.
 *   - examples/vite-app: `vite build` + `vite preview`, and the `vite` dev server. The page
 *     prints x and y; y must be RMSNorm of x (to the 5 printed decimals), the pool's y the same.
 *   - every ```html block of the README and docs/: saved into the plain page's folder and
 *     loaded there; what it writes into the page must equal what the same module script
 *     prints under Node (`document.body.textContent = v` run as `console.log(v)`).
 */
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cp, mkdir, readdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { launchEngine, waitFor, type Engine, type EngineName } from '../../demo/engines.js';
import { webkitInstalled } from '../../demo/webkit.js';
import { npm, packRepo, REPO, run, type Packed } from './pack.js';
import { printedUrl, startVite, VITE_BIN } from './vite.js';

const EXAMPLES = join(REPO, 'examples');
const PAGES = ['README.md', ...(await readdir(join(REPO, 'docs'))).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** Each engine, and whether its pages get shared memory when isolated. */
const RUNS: { name: string; engine: EngineName; shared: boolean }[] = [
  { name: 'Chromium', engine: 'chromium', shared: true },
  { name: 'Firefox', engine: 'firefox', shared: true },
  ...(webkitInstalled()
    ? [
        { name: 'WebKit', engine: 'webkit' as const, shared: true },
        { name: 'WebKit without SharedArrayBuffer', engine: 'webkit' as const, shared: false },
      ]
    : []),
];

let packed: Packed;
let browser: Engine;
let plain: string;
let viteApp: string;
const children: ChildProcess[] = [];

/** Starts the plain page's own server (examples/plain-page/serve.mjs) on a free port. */
function servePlain(isolated: boolean): Promise<string> {
  const child = spawn(process.execPath, ['serve.mjs'], {
    cwd: plain,
    env: { ...process.env, PORT: '0', ISOLATED: isolated ? '1' : '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  return printedUrl(child, 'node serve.mjs');
}

/** Loads `url`, waits for `body[data-state]` to be set, returns the state and the page's text by element id. */
async function load(url: string, ids: string[]): Promise<{ state: string; text: Record<string, string> }> {
  const page = await browser.newPage();
  try {
    await page.goto(url);
    await waitFor(page, 'document.body.dataset.state !== undefined', 90_000).catch((err: unknown) => {
      throw new Error(`${url}: the page never finished: ${String(err)}`);
    });
    const text: Record<string, string> = {};
    for (const id of ids) text[id] = await page.evaluate<string>(`document.getElementById(${JSON.stringify(id)})?.textContent ?? ''`);
    return { state: await page.evaluate<string>('document.body.dataset.state'), text };
  } finally {
    await page.close();
  }
}

beforeAll(async () => {
  packed = await packRepo('rmsnorm-wasm-examples-');
  plain = join(packed.dir, 'plain-page');
  await cp(join(EXAMPLES, 'plain-page'), plain, { recursive: true });
  await npm(['install', packed.tarball, '--offline', '--no-audit', '--no-fund', '--ignore-scripts'], plain);
  // The Vite app as its package.json says, with the package from the tarball (npm would unpack
  // it the same way: it has no dependencies) and the repository's Vite: this machine is offline.
  viteApp = join(packed.dir, 'vite-app');
  await cp(join(EXAMPLES, 'vite-app'), viteApp, { recursive: true });
  await mkdir(join(viteApp, 'node_modules', 'rmsnorm-wasm'), { recursive: true });
  await run('tar', ['xzf', packed.tarball, '-C', join(viteApp, 'node_modules', 'rmsnorm-wasm'), '--strip-components=1']);
  await symlink(join(REPO, 'node_modules', 'vite'), join(viteApp, 'node_modules', 'vite'), 'dir');
}, 180_000);

afterAll(async () => {
  for (const c of children) c.kill();
  await packed?.cleanup();
});

describe.each(RUNS)('$name', ({ engine, shared }) => {
  beforeAll(async () => {
    browser = await launchEngine(engine, { sharedArrayBuffer: shared });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });

  describe('examples/plain-page', () => {
    const MAX_ERROR = 1e-6; // |y − y64| / (1 + |y64|): a few float32 ulps

    test.each([
      [true, shared ? 'threads' : 'single'],
      [false, 'single'],
    ])('served by serve.mjs, isolated %s: the pool in %s mode, every call within float32 tolerance', async (isolated, mode) => {
      const { state, text } = await load(await servePlain(isolated), ['out']);
      const out = text.out!;
      expect(state, out).toBe('done');
      expect(out).toContain(`cross-origin isolated: ${isolated}`);
      expect(out).toMatch(new RegExp(`^pool \\(${mode}, \\d+ workers\\)`, 'm'));
      const errors = [...out.matchAll(/max error (\S+)/g)].map((m) => Number(m[1]));
      expect(errors, out).toHaveLength(3);
      for (const e of errors) expect(e, out).toBeLessThanOrEqual(MAX_ERROR);
    }, 120_000);
  });

  describe('examples/vite-app', () => {
    /** RMSNorm (eps 1e-5, weight 1) of the rows of `x` in float64. */
    function reference(x: number[], dim: number): number[] {
      const y: number[] = [];
      for (let r = 0; r < x.length; r += dim) {
        const row = x.slice(r, r + dim);
        const rstd = 1 / Math.sqrt(row.reduce((s, v) => s + v * v, 0) / dim + 1e-5);
        y.push(...row.map((v) => v * rstd));
      }
      return y;
    }

    async function expectApp(url: string): Promise<void> {
      const { state, text } = await load(url, ['build', 'mode', 'x', 'y', 'y-pool']);
      expect(state).toBe('done');
      expect(text.mode).toBe(shared ? 'threads' : 'single');
      const [x, y] = [text.x!, text.y!].map((s) => s.split(' ').map(Number));
      expect(y).toHaveLength(x!.length);
      // x is printed to 5 decimals: y of the printed x is within ~1e-5 of y of the real x.
      const y64 = reference(x!, 8);
      for (let i = 0; i < y!.length; i++) expect(Math.abs(y![i]! - y64[i]!), `y[${i}]`).toBeLessThan(5e-5);
      expect(text['y-pool']).toBe(text.y);
    }

    test('`vite build` emits the wasm and the worker; `vite preview` serves it isolated', async () => {
      await run(process.execPath, [VITE_BIN, 'build'], { cwd: viteApp, timeout: 120_000 });
      const assets = await readdir(join(viteApp, 'dist', 'assets'));
      expect(assets.some((f) => f.endsWith('.wasm'))).toBe(true);
      expect(assets.some((f) => /worker/i.test(f) && f.endsWith('.js'))).toBe(true);
      await expectApp(await startVite(viteApp, ['preview'], children));
    }, 180_000);

    test('the `vite` dev server', async () => {
      await expectApp(await startVite(viteApp, [], children));
    }, 120_000);
  });

  describe('examples/decoder.mjs', () => {
    test('in a page, unchanged: the residual stream through the layer\'s fused add, as under Node', async () => {
      await cp(join(EXAMPLES, 'decoder.mjs'), join(plain, 'decoder.mjs'));
      const html = readFileSync(join(plain, 'index.html'), 'utf8').replace('./main.js', './decoder.mjs').replace(/<pre id="out">.*<\/pre>/, '');
      await writeFile(join(plain, 'decoder.html'), html);
      const { stdout } = await run(process.execPath, ['decoder.mjs'], { cwd: plain, timeout: 60_000 });
      const page = await browser.newPage();
      try {
        await page.goto((await servePlain(true)) + 'decoder.html');
        await waitFor(page, 'document.body.dataset.state !== undefined', 60_000);
        expect(await page.evaluate<string>('document.body.dataset.state')).toBe('done');
        const text = await page.evaluate<string>('document.body.textContent');
        const last = (t: string) => t.trim().split('\n').pop();
        expect(last(text)).toBe(last(stdout));
        expect(last(text)).toMatch(/max error against float64 below 1e-5$/);
      } finally {
        await page.close();
      }
    }, 120_000);
  });

  describe('the HTML blocks of the README and docs/ run in a page', () => {
    const blocks = PAGES.flatMap((page) => {
      const text = readFileSync(join(REPO, page), 'utf8');
      return [...text.matchAll(/^```html\n([\s\S]*?)^```/gm)].map((m, i) => ({ page, index: i + 1, html: m[1]! }));
    });

    test('the README has one', () => {
      expect(blocks.filter((b) => b.page === 'README.md').length).toBeGreaterThanOrEqual(1);
    });

    test.each(blocks.map((b) => [`${b.page} html block ${b.index}`, b] as const))('%s', async (_name, b) => {
      const script = /<script type="module">([\s\S]*?)<\/script>/.exec(b.html)?.[1];
      expect(script, 'a module script').toBeDefined();
      expect(script, 'writes its result into the page').toMatch(/document\.body\.textContent = /);
      const name = `${b.page.replace(/\W/g, '_')}_${b.index}`;
      // In <head>, so that the body's text is only what the script writes; an empty icon, so that
      // the browser asks for no /favicon.ico (a 404 in the console).
      await writeFile(join(plain, `${name}.html`), `<!doctype html>\n<head>\n<meta charset="utf-8">\n<link rel="icon" href="data:,">\n${b.html}</head>\n<body></body>\n`);
      await writeFile(join(plain, `${name}.mjs`), script!.replace(/document\.body\.textContent = (.*);$/gm, 'console.log($1);'));
      const { stdout } = await run(process.execPath, [`${name}.mjs`], { cwd: plain, timeout: 60_000 });
      const url = (await servePlain(true)) + `${name}.html`;
      const page = await browser.newPage();
      try {
        await page.goto(url);
        await waitFor(page, "document.body.textContent.trim() !== ''", 60_000);
        expect(page.errors).toEqual([]);
        expect((await page.evaluate<string>('document.body.textContent')).trim()).toBe(stdout.trim());
      } finally {
        await page.close();
      }
    }, 120_000);
  });
});
