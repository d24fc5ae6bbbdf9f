/**
 * A one-node ONNX model (`Y = Norm(X, scale)`) encoded by hand as protobuf bytes, so the
 * benchmark can feed onnxruntime without an exporter or a protobuf dependency.
 *
 * Field numbers are those of onnx/onnx.proto (ModelProto, GraphProto, NodeProto,
 * ValueInfoProto, TypeProto, TensorShapeProto, TensorProto, AttributeProto,
 * OperatorSetIdProto). Only what this model needs is written.
 * @module
 */

/** Protobuf wire types. */
const VARINT = 0;
const I32 = 5;
const LEN = 2;

/** ONNX TensorProto.DataType FLOAT. */
const FLOAT = 1;
/** ONNX AttributeProto.AttributeType. */
const ATTR_FLOAT = 1;
const ATTR_INT = 2;

/** Appends protobuf fields; `bytes()` gives the encoded message. */
class Writer {
  private readonly parts: number[] = [];
  private readonly chunks: Uint8Array[] = [];

  private flush(): void {
    if (this.parts.length) {
      this.chunks.push(Uint8Array.from(this.parts));
      this.parts.length = 0;
    }
  }

  /** Unsigned varint; handles values up to 2^53 (int64 fields here are dims and versions). */
  private varint(v: number): void {
    if (v < 0 || !Number.isSafeInteger(v)) throw new RangeError(`varint out of range: ${v}`);
    while (v >= 0x80) {
      this.parts.push((v % 0x80) | 0x80);
      v = Math.floor(v / 0x80);
    }
    this.parts.push(v);
  }

  private tag(field: number, wire: number): void {
    this.varint(field * 8 + wire);
  }

  int(field: number, v: number): this {
    this.tag(field, VARINT);
    this.varint(v);
    return this;
  }

  float(field: number, v: number): this {
    this.tag(field, I32);
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, v, true);
    this.parts.push(...b);
    return this;
  }

  bytesField(field: number, data: Uint8Array): this {
    this.tag(field, LEN);
    this.varint(data.length);
    this.flush();
    this.chunks.push(data);
    return this;
  }

  string(field: number, s: string): this {
    return this.bytesField(field, new TextEncoder().encode(s));
  }

  message(field: number, m: Writer): this {
    return this.bytesField(field, m.bytes());
  }

  bytes(): Uint8Array {
    this.flush();
    const n = this.chunks.reduce((s, c) => s + c.length, 0);
    const out = new Uint8Array(n);
    let o = 0;
    for (const c of this.chunks) {
      out.set(c, o);
      o += c.length;
    }
    return out;
  }
}

/** ValueInfoProto for a float tensor of fixed shape. */
function tensorInfo(name: string, shape: readonly number[]): Writer {
  const dims = new Writer();
  for (const d of shape) dims.message(1, new Writer().int(1, d)); // TensorShapeProto.dim{dim_value}
  const tensorType = new Writer().int(1, FLOAT).message(2, dims); // TypeProto.Tensor{elem_type, shape}
  const type = new Writer().message(1, tensorType); // TypeProto{tensor_type}
  return new Writer().string(1, name).message(2, type); // ValueInfoProto{name, type}
}

/** Which normalization node the model holds. */
export interface NormOp {
  /** `RMSNormalization` (ONNX opset 23) or `SimplifiedLayerNormalization` (onnxruntime). */
  opType: 'RMSNormalization' | 'SimplifiedLayerNormalization';
  /** Operator domain: '' is the default ONNX domain, 'com.microsoft' onnxruntime's contrib ops. */
  domain: '' | 'com.microsoft';
  /** Default-domain opset version to import (23 is the first with RMSNormalization). */
  opset: number;
}

/** RMSNormalization, ONNX opset 23: `Y = X / sqrt(mean(X², axis..) + epsilon) * scale`. */
export const RMS_NORMALIZATION: NormOp = { opType: 'RMSNormalization', domain: '', opset: 23 };

/**
 * onnxruntime's SimplifiedLayerNormalization (the op its transformer fusions emit for
 * T5/Llama RMSNorm). onnxruntime registers its schema in the default ONNX domain, since
 * version 1; it is not part of the ONNX standard.
 */
export const SIMPLIFIED_LAYER_NORM: NormOp = { opType: 'SimplifiedLayerNormalization', domain: '', opset: 17 };

/**
 * Encodes an ONNX ModelProto with one graph input `X` (`rows × dim` float), one initializer
 * `scale` (`dim` floats, the gain), one node of `op` with `axis = -1`, `epsilon = eps` and
 * `stash_type = 1` (compute in float32), and one output `Y` (`rows × dim`).
 *
 * @param rows Rows of X (fixed in the model, so no shape inference is left to runtime).
 * @param dim Row length, the normalized axis.
 * @param weight The gain, `dim` floats, stored as the initializer's raw little-endian data.
 * @param eps Added to the mean square inside the root.
 * @param op The node type and domain to use.
 * @returns The serialized model, ready for `InferenceSession.create(bytes)`.
 */
export function buildNormModel(rows: number, dim: number, weight: Float32Array, eps: number, op: NormOp): Uint8Array {
  if (weight.length !== dim) throw new RangeError(`buildNormModel: weight has ${weight.length} floats, dim is ${dim}`);
  const node = new Writer()
    .string(1, 'X') // NodeProto.input
    .string(1, 'scale')
    .string(2, 'Y') // NodeProto.output
    .string(3, 'norm') // NodeProto.name
    .string(4, op.opType); // NodeProto.op_type
  // AttributeProto{name=1, f=2, i=3, type=20}; ints are two's complement varints, so -1 is
  // encoded as 2^64-1; `axis = -1` is every op's default, so it is simply left out.
  node.message(5, new Writer().string(1, 'epsilon').float(2, eps).int(20, ATTR_FLOAT));
  node.message(5, new Writer().string(1, 'stash_type').int(3, 1).int(20, ATTR_INT));
  if (op.domain) node.string(7, op.domain); // NodeProto.domain

  // Little-endian float bytes, whatever the host's order.
  const raw = new Uint8Array(dim * 4);
  const dv = new DataView(raw.buffer);
  for (let i = 0; i < dim; i++) dv.setFloat32(i * 4, weight[i]!, true);
  const scale = new Writer().int(1, dim).int(2, FLOAT).string(8, 'scale').bytesField(9, raw); // TensorProto{dims, data_type, name, raw_data}

  const graph = new Writer()
    .message(1, node) // GraphProto.node
    .string(2, `${op.opType}_${rows}x${dim}`) // GraphProto.name
    .message(5, scale) // GraphProto.initializer
    .message(11, tensorInfo('X', [rows, dim])) // GraphProto.input
    .message(12, tensorInfo('Y', [rows, dim])); // GraphProto.output

  const model = new Writer()
    .int(1, op.opset >= 23 ? 11 : 8) // ModelProto.ir_version: opset 23 needs IR v11 (ONNX 1.18)
    .string(2, 'rmsnorm-wasm-bench') // producer_name
    .message(7, graph) // graph
    .message(8, new Writer().string(1, '').int(2, op.opset)); // opset_import{domain, version}
  if (op.domain) model.message(8, new Writer().string(1, op.domain).int(2, 1));
  return model.bytes();
}
