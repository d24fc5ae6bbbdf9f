/**
 * onnxruntime contenders, forward only (onnxruntime has no RMSNorm backward to call):
 *
 * - `ort-web-Nt`: onnxruntime-web's wasm backend in Node (`executionProviders: ['wasm']`,
 *   `ort.env.wasm.numThreads = N`) running one `RMSNormalization` node (ONNX opset 23).
 * - `ort-node-Nt`: onnxruntime-node (native CPU provider, `intraOpNumThreads = N`) running
 *   one `SimplifiedLayerNormalization` node in the default ONNX domain, where onnxruntime
 *   registers it (a `com.microsoft` domain node is rejected: "not a registered function/op").
 *
 * Both ops are single CPU kernels in onnxruntime 1.30 (not expanded into a subgraph: the
 * session log says "All nodes placed on [CPUExecutionProvider]. Number of nodes: 1").
 * Inputs are ort.Tensors made once; only `session.run()` is timed, which includes
 * onnxruntime's own copy of X into and Y out of its memory (as a user of it would pay).
 *
 * onnxruntime-web reads `env.wasm.numThreads` once, when it first initializes; a second
 * value in the same process is silently ignored. So each web configuration runs in its own
 * process (see ort-child.ts).
 * @module
 */
import { buildNormModel, RMS_NORMALIZATION, SIMPLIFIED_LAYER_NORM } from '../onnx-model.js';
import type { Case, Contender, Instance } from '../types.js';

/** What both onnxruntime packages offer that we use. */
interface OrtTensor {
  data: unknown;
}
interface OrtSession {
  run(feeds: Record<string, OrtTensor>): Promise<Record<string, OrtTensor>>;
  release(): Promise<void>;
}
interface Ort {
  Tensor: new (type: 'float32', data: Float32Array, dims: number[]) => OrtTensor;
  InferenceSession: { create(model: Uint8Array, options?: object): Promise<OrtSession> };
  env: { wasm?: { numThreads?: number; simd?: boolean }; logLevel?: string };
}

async function instance(ort: Ort, c: Case, model: Uint8Array, options: object): Promise<Instance> {
  const session = await ort.InferenceSession.create(model, options);
  const feeds = { X: new ort.Tensor('float32', c.x, [c.rows, c.dim]) };
  let last: Float32Array | undefined;
  return {
    async: true,
    fn: () => session.run(feeds).then((r) => {
      last = r.Y!.data as Float32Array;
    }),
    outputs: () => ({ y: last }),
    dispose: () => session.release(),
  };
}

/** onnxruntime-web (wasm backend) with `threads` threads; call once per process. */
export async function ortWeb(threads: number): Promise<Contender[]> {
  const ort = (await import('onnxruntime-web')) as unknown as Ort;
  ort.env.wasm!.numThreads = threads;
  ort.env.logLevel = 'error';
  return [
    {
      name: `ort-web-${threads}t`, family: 'ort-web', op: 'forward', threads, zeroCopy: false,
      note: 'onnxruntime-web 1.30 wasm EP, RMSNormalization (opset 23)',
      make: (c) =>
        instance(ort, c, buildNormModel(c.rows, c.dim, c.w, c.eps, RMS_NORMALIZATION), {
          executionProviders: ['wasm'],
          graphOptimizationLevel: 'all',
        }),
    },
  ];
}

/** onnxruntime-node (native CPU EP) with 1 and `maxThreads` intra-op threads. */
export async function ortNode(maxThreads: number): Promise<Contender[]> {
  const ort = (await import('onnxruntime-node')) as unknown as Ort;
  const out: Contender[] = [];
  for (const t of new Set([1, maxThreads])) {
    out.push({
      name: `ort-node-${t}t`, family: 'ort-node', op: 'forward', threads: t, zeroCopy: false,
      note: 'onnxruntime-node 1.30 CPU EP, SimplifiedLayerNormalization (default domain)',
      make: (c) =>
        instance(ort, c, buildNormModel(c.rows, c.dim, c.w, c.eps, SIMPLIFIED_LAYER_NORM), {
          executionProviders: ['cpu'],
          intraOpNumThreads: t,
          interOpNumThreads: 1,
          executionMode: 'sequential',
          graphOptimizationLevel: 'all',
          logSeverityLevel: 3,
        }),
    });
  }
  return out;
}
