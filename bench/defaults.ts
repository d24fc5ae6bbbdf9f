/**
 * The shapes the benchmark runs unless told otherwise.
 * @module
 */
import type { Shape } from './types.js';

/**
 * Shapes from real models:
 * 1×4096 one decoded token of Llama-7B; 32/64/512×4096 batches of tokens; 1024×5120 a batch
 * of a 13B-sized model (20 MiB of input: about the size of a server's last-level cache);
 * 4096×4096 a long prompt; 2048×768 BERT/GPT-2 base; 1×896 one token of a small
 * (Qwen2-0.5B-sized) model.
 */
export const DEFAULT_SHAPES: readonly Shape[] = [
  { rows: 1, dim: 4096 },
  { rows: 32, dim: 4096 },
  { rows: 64, dim: 4096 },
  { rows: 512, dim: 4096 },
  { rows: 1024, dim: 5120 },
  { rows: 4096, dim: 4096 },
  { rows: 2048, dim: 768 },
  { rows: 1, dim: 896 },
];

/** `--quick`: tiny shapes, one with a row length that is not a multiple of 4 (the tail loops). */
export const QUICK_SHAPES: readonly Shape[] = [
  { rows: 4, dim: 64 },
  { rows: 3, dim: 100 },
];
