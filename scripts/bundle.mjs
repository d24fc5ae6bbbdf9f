// The package's JavaScript as users load it: one bundle (esbuild) of the TypeScript sources,
// written to bundle/. Importing the package then reads a handful of files instead of the ~45
// modules tsc writes to dist/ (which stays: the type declarations, and the modules the tests
// reach inside), and a page fetches as few. Entries: the API, the Node API, the command, the
// pool's two worker scripts. Code shared between entries goes into chunks at the top of
// bundle/, the pool's code into one loaded on createPool. wasm/ stays as it is, beside bundle/
// as beside dist/ (load.ts finds it at ../wasm), and Node's modules are left to Node. The
// identifiers are kept (error names and stack traces read as in the sources); the maps point
// at ts/. Whitespace is kept: Node prints the source line of an uncaught error, and in a
// whitespace-minified file that line is the whole file; esbuild's lineLimit would cut it, but
// it cuts inside `new URL('…', import.meta.url)` too, where bundlers such as Vite look for
// the wasm files.
import * as esbuild from 'esbuild';
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
rmSync(`${root}/bundle`, { recursive: true, force: true });
await esbuild.build({
  absWorkingDir: root,
  entryPoints: ['ts/index.ts', 'ts/node/index.ts', 'ts/node/bin.ts', 'ts/node/pool-worker.ts', 'ts/pool/worker/web-worker.ts'],
  outbase: 'ts',
  outdir: 'bundle',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'neutral',
  target: 'es2022',
  external: ['node:*', '../wasm/*'],
  minifySyntax: true,
  sourcemap: 'linked',
  sourcesContent: false,
  legalComments: 'none',
  logLevel: 'warning',
});
