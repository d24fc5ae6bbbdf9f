/**
 * Driving WebKit — Safari's engine, JavaScriptCore — as WebKitGTK ships it on Debian: its
 * MiniBrowser, through WebKitWebDriver (a W3C WebDriver server), under Xvfb (MiniBrowser has
 * no headless mode). A W3C client over `fetch` is all it takes: a session, navigate, execute a
 * script, delete the session. Every request has a timeout, since a capability the driver does
 * not like makes `POST /session` hang rather than fail.
 *
 * The GTK port gives pages no SharedArrayBuffer unless the driver's environment has
 * `JSC_useSharedArrayBuffer=1` (Safari has it on cross-origin-isolated pages; the variable
 * enables it on every page, so a page's `crossOriginIsolated` still decides what the package
 * does): `launchWebKit({ sharedArrayBuffer: true })` sets it. Console messages do not come back
 * through the driver, and JSC's `err.stack` lacks the message: pages report `String(err)`.
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';

/** Where Debian's packages put the programs (override with the environment variables). */
export const MINIBROWSER = process.env.MINIBROWSER_PATH ?? '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser';
export const WEBKIT_DRIVER = process.env.WEBKIT_DRIVER_PATH ?? '/usr/bin/WebKitWebDriver';
export const XVFB = process.env.XVFB_PATH ?? '/usr/bin/Xvfb';

/** Whether the three programs are installed (scripts/setup.sh installs them). */
export const webkitInstalled = (): boolean => [MINIBROWSER, WEBKIT_DRIVER, XVFB].every((p) => existsSync(p));

/** A port nobody listens on now. */
function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => ok(port));
    });
  });
}

/** Starts Xvfb on a free display; resolves to it (`:N`) once the server is up. */
function startXvfb(): Promise<{ display: string; proc: ChildProcess }> {
  return new Promise((ok, fail) => {
    // -displayfd: Xvfb picks a free display and writes its number to fd 3 when ready.
    const proc = spawn(XVFB, ['-displayfd', '3', '-nolisten', 'tcp', '-screen', '0', '1280x800x24'], { stdio: ['ignore', 'ignore', 'pipe', 'pipe'] });
    let out = '';
    const timer = setTimeout(() => fail(new Error('Xvfb did not start within 10 s')), 10_000);
    (proc.stdio[3] as NodeJS.ReadableStream).on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) {
        clearTimeout(timer);
        ok({ display: `:${out.trim()}`, proc });
      }
    });
    proc.once('exit', (code) => fail(new Error(`Xvfb exited with ${code}`)));
  });
}

/** One W3C WebDriver request (JSON in and out), failing after `ms`. */
async function call<T>(base: string, method: string, path: string, body: unknown, ms: number): Promise<T> {
  const res = await fetch(base + path, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(ms),
  });
  const json = (await res.json()) as { value: T & { error?: string; message?: string } };
  if (!res.ok || (json.value && typeof json.value === 'object' && 'error' in json.value && json.value.error)) {
    throw new Error(`WebKitWebDriver ${method} ${path}: ${json.value?.error ?? res.status} ${json.value?.message ?? ''}`);
  }
  return json.value;
}

/** A running MiniBrowser with one window: see the module doc. */
export class WebKit {
  private constructor(
    private readonly base: string,
    private readonly session: string,
    /** MiniBrowser's WebKitGTK version, as the driver reports it. */
    readonly version: string,
    private readonly procs: ChildProcess[],
  ) {}

  /** Opens `url` in the window (resolves once it has loaded). */
  async goto(url: string): Promise<void> {
    await call(this.base, 'POST', `/session/${this.session}/url`, { url }, 60_000);
  }

  /**
   * Evaluates the expression `expr` in the page, awaiting the promise it may give; resolves to
   * its value (JSON). A rejection comes back as an Error with `String(err)` of the page's error.
   */
  async evaluate<T>(expr: string, timeoutMs = 60_000): Promise<T> {
    await call(this.base, 'POST', `/session/${this.session}/timeouts`, { script: timeoutMs }, 10_000);
    const script = `const done = arguments[arguments.length - 1];
      Promise.resolve().then(() => (${expr})).then((v) => done({ ok: v === undefined ? null : v }), (e) => done({ failed: String(e) }));`;
    const r = await call<{ ok?: T; failed?: string }>(this.base, 'POST', `/session/${this.session}/execute/async`, { script, args: [] }, timeoutMs + 10_000);
    if (r.failed !== undefined) throw new Error(`page: ${r.failed}`);
    return r.ok as T;
  }

  /** Waits until the page sets `globalThis.__result`, and returns it (`{ error }`: thrown). */
  async result<T>(timeoutMs = 90_000): Promise<T> {
    const t0 = Date.now();
    for (;;) {
      const r = await this.evaluate<(T & { error?: string }) | null>('globalThis.__result ?? null');
      if (r !== null && r !== undefined) {
        if (typeof r === 'object' && r.error) throw new Error(`page failed: ${r.error}`);
        return r;
      }
      if (Date.now() - t0 > timeoutMs) throw new Error(`page produced no result within ${timeoutMs} ms`);
      await new Promise((ok) => setTimeout(ok, 100));
    }
  }

  /** Ends the session and stops MiniBrowser, the driver and Xvfb. */
  async close(): Promise<void> {
    await call(this.base, 'DELETE', `/session/${this.session}`, undefined, 10_000).catch(() => {});
    for (const p of this.procs) p.kill('SIGTERM');
  }

  /**
   * Starts Xvfb, WebKitWebDriver and a MiniBrowser session. `sharedArrayBuffer` gives pages
   * SharedArrayBuffer (`JSC_useSharedArrayBuffer=1`), as Safari gives isolated pages.
   */
  static async launch(o: { sharedArrayBuffer?: boolean } = {}): Promise<WebKit> {
    const xvfb = await startXvfb();
    const procs: ChildProcess[] = [xvfb.proc];
    try {
      const port = await freePort();
      const env: NodeJS.ProcessEnv = { ...process.env, DISPLAY: xvfb.display };
      if (o.sharedArrayBuffer) env.JSC_useSharedArrayBuffer = '1';
      else delete env.JSC_useSharedArrayBuffer;
      const driver = spawn(WEBKIT_DRIVER, [`--port=${port}`], { env, stdio: 'ignore' });
      procs.push(driver);
      const base = `http://127.0.0.1:${port}`;
      for (let i = 0; ; i++) {
        const ready = await call<{ ready?: boolean }>(base, 'GET', '/status', undefined, 2000).then((s) => s.ready === true, () => false);
        if (ready) break;
        if (i > 100) throw new Error('WebKitWebDriver did not answer within 10 s');
        await new Promise((ok) => setTimeout(ok, 100));
      }
      const caps = { browserName: 'MiniBrowser', 'webkitgtk:browserOptions': { binary: MINIBROWSER, args: ['--automation'] } };
      const s = await call<{ sessionId: string; capabilities: { browserVersion?: string } }>(base, 'POST', '/session', { capabilities: { alwaysMatch: caps } }, 30_000);
      return new WebKit(base, s.sessionId, s.capabilities.browserVersion ?? 'unknown', procs);
    } catch (e) {
      for (const p of procs) p.kill('SIGTERM');
      throw e;
    }
  }
}
