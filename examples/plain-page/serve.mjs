// A static server for this folder that sends the two headers making the page cross-origin
// isolated, so the worker pool gets real threads (SharedArrayBuffer). Node only, no packages.
//
//   node serve.mjs               → http://localhost:8080/  (isolated: pool mode 'threads')
//   ISOLATED=0 node serve.mjs    → the same page without the headers (pool mode 'single')
//   PORT=3000 node serve.mjs     → another port (0: any free port)
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('.', import.meta.url));
const port = Number(process.env.PORT ?? 8080);
const isolated = process.env.ISOLATED !== '0';

// Module scripts, module workers and WebAssembly.compileStreaming refuse other content types.
const types = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
  '.css': 'text/css',
};

const server = createServer(async (req, res) => {
  // URL parsing resolves '..' segments, so the path cannot climb out of root.
  const path = decodeURIComponent(new URL(req.url ?? '/', 'http://localhost').pathname);
  const file = join(root, path.endsWith('/') ? path + 'index.html' : path);
  if (!file.startsWith(root)) return void res.writeHead(403).end();
  try {
    const body = await readFile(file);
    res.writeHead(200, {
      'Content-Type': types[extname(file)] ?? 'application/octet-stream',
      ...(isolated && {
        'Cross-Origin-Opener-Policy': 'same-origin',
        'Cross-Origin-Embedder-Policy': 'require-corp',
      }),
    });
    res.end(body);
  } catch {
    res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found\n');
  }
});

server.listen(port, 'localhost', () => {
  console.log(`serving ${root} at http://localhost:${server.address().port}/ (${isolated ? 'cross-origin isolated' : 'not isolated'})`);
});
