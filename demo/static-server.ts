/**
 * A small static file server for browser tests, the demo and the browser benchmark:
 * node:http on 127.0.0.1, a random free port, correct MIME types (application/wasm for
 * .wasm, which `WebAssembly.compileStreaming` insists on) and, when asked, the COOP/COEP
 * headers that make a page cross-origin isolated (and so give it SharedArrayBuffer).
 * @module
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { extname, join, normalize, resolve, sep } from 'node:path';
import type { AddressInfo } from 'node:net';

/** Content types by extension; anything else is served as application/octet-stream. */
export const MIME: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
  '.ts': 'text/plain; charset=utf-8',
};

/** The two headers that make a document cross-origin isolated. */
export const ISOLATION_HEADERS: Readonly<Record<string, string>> = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
};

/**
 * The Content-Security-Policy docs/web-app.md recommends, which the isolated test pages are
 * served under: no inline script, and 'wasm-unsafe-eval' so that WebAssembly may compile.
 */
export const CSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'";

/** Options of {@link serveStatic}. */
export interface ServeOptions {
  /** Folder served at `/`. Requests outside it get 404. */
  root: string;
  /** Send COOP/COEP on every response (default false). */
  isolated?: boolean;
  /** Extra headers on every response, e.g. a Content-Security-Policy. */
  headers?: Record<string, string>;
  /** Extra headers for one served file (by its path on disk), after the common ones. */
  headersFor?: (file: string) => Record<string, string> | undefined;
  /** Port to listen on (default 0: a random free port). */
  port?: number;
  /** Extra routes, checked before the file system: return true when handled. */
  routes?: (path: string, res: ServerResponse, body: () => Promise<Buffer>, url: URL) => boolean | Promise<boolean>;
}

/** A running server: `url` ends with `/`; `close()` also drops kept-alive connections. */
export interface StaticServer {
  url: string;
  port: number;
  server: Server;
  close(): Promise<void>;
}

/**
 * Serves `root` on `http://127.0.0.1:<port>/` (loopback only). `/` and folder paths serve their
 * `index.html`. Every response is `Cache-Control: no-store` so that rebuilt files are never stale.
 */
export async function serveStatic(options: ServeOptions): Promise<StaticServer> {
  const root = resolve(options.root);
  const common: Record<string, string> = {
    'Cache-Control': 'no-store',
    ...(options.isolated ? ISOLATION_HEADERS : {}),
    ...options.headers,
  };
  const server = createServer(async (req, res) => {
    try {
      for (const [k, v] of Object.entries(common)) res.setHeader(k, v);
      const url = new URL(req.url ?? '/', 'http://localhost');
      const path = decodeURIComponent(url.pathname);
      const body = () =>
        new Promise<Buffer>((ok, fail) => {
          const chunks: Buffer[] = [];
          req.on('data', (c: Buffer) => chunks.push(c));
          req.on('end', () => ok(Buffer.concat(chunks)));
          req.on('error', fail);
        });
      if (options.routes && (await options.routes(path, res, body, url))) return;
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405).end();
        return;
      }
      let file = normalize(join(root, path));
      if (file !== root && !file.startsWith(root + sep)) {
        res.writeHead(404).end('not found');
        return;
      }
      let info = await stat(file).catch(() => null);
      if (info?.isDirectory()) {
        file = join(file, 'index.html');
        info = await stat(file).catch(() => null);
      }
      if (!info?.isFile()) {
        // Browsers ask for it unprompted; a 404 would show up as a console error in tests.
        if (path === '/favicon.ico') {
          res.writeHead(204).end();
          return;
        }
        res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found');
        return;
      }
      const data = await readFile(file);
      res.writeHead(200, {
        'Content-Type': MIME[extname(file).toLowerCase()] ?? 'application/octet-stream',
        'Content-Length': data.length,
        ...options.headersFor?.(file),
      });
      res.end(req.method === 'HEAD' ? undefined : data);
    } catch (err) {
      if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'text/plain' });
      res.end(String(err));
    }
  });
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(options.port ?? 0, '127.0.0.1', () => ok());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    port,
    server,
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}
