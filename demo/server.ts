/**
 * The demo's server: the repository root over loopback HTTP, with COOP/COEP (unless turned
 * off, to show single mode) and the CSP docs/web-app.md recommends; `/` redirects to the page.
 * @module
 */
import type { ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import { CSP, serveStatic, type StaticServer } from './static-server.js';

/** The repository root: the page imports ../dist and ../wasm from it. */
export const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Options of {@link startDemoServer}. */
export interface DemoServerOptions {
  /** TCP port on 127.0.0.1; 0 (default) picks a free one. */
  port?: number;
  /** Send COOP/COEP (default true): the pool gets threads. */
  isolated?: boolean;
  /** More routes, as serveStatic's: true when answered. */
  routes?: (path: string, res: ServerResponse, url: URL) => boolean;
}

/** Starts the server; the page is at `${server.url}demo/`. */
export function startDemoServer(options: DemoServerOptions = {}): Promise<StaticServer> {
  return serveStatic({
    root: REPO_ROOT,
    port: options.port ?? 0,
    isolated: options.isolated ?? true,
    headers: { 'Content-Security-Policy': CSP },
    routes(path, res, _body, url) {
      if (path === '/') {
        res.writeHead(302, { Location: '/demo/' }).end();
        return true;
      }
      return options.routes?.(path, res, url) ?? false;
    },
  });
}
