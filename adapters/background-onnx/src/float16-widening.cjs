"use strict";
// Widens an ONNX model's float16 tensors to float32, at the protobuf wire level (no schema, no
// dependency). Models published with float16 weights for size (the IS-Net of
// @imgly/background-removal-data, many exports of U2-Net and BiRefNet) run on onnxruntime's CPU
// provider through Cast nodes around every layer it has no float16 kernel for: measured on IS-Net
// at 1024 x 1024, 111 casts that keep a float16 and a float32 copy of the activations, 0.6 s of a
// 3.2 s first run, and 1.5 GB peak against 1.2 GB for the same model widened. Widening is exact
// (every float16 value is a float32 value) and the computation is the float32 one the casts
// approximated, so the masks only gain precision.
//
// What changes: initializers and tensor attributes of type FLOAT16 become FLOAT (raw_data); Cast
// "to" and "dtype" attributes naming FLOAT16 name FLOAT; value types (inputs, outputs, value_info,
// nested in sequences and optionals) of FLOAT16 become FLOAT; subgraphs (If, Loop, Scan) likewise.
// A Cast from float32 to float32 is removed by onnxruntime's own optimiser. Models with external
// data or float16 sparse initializers are returned unchanged (`widened: false`).
//
// ONNX field numbers used (onnx.proto3): ModelProto.graph 7; GraphProto node 1, initializer 5,
// sparse_initializer 15, input 11, output 12, value_info 13; NodeProto attribute 5; AttributeProto
// name 1, i 3, t 5, g 6, tensors 10, graphs 11; TensorProto data_type 2, int32_data 5, raw_data 9,
// data_location 14; ValueInfoProto type 2; TypeProto tensor_type 1, sequence_type 4, map_type 5,
// optional_type 9; TypeProto.Tensor elem_type 1; Sequence/Optional elem_type 1; Map value_type 2.

const { join, readVarint, varint } = require("./protobuf-wire.cjs");

const FLOAT = 1;
const FLOAT16 = 10;

class Unsupported extends Error {}

/** float16 bit patterns to float32 values, all 65,536 of them. */
let halfTable;
function halves() {
  if (halfTable !== undefined) return halfTable;
  halfTable = new Float32Array(65536);
  for (let bits = 0; bits < 65536; bits += 1) {
    const sign = bits & 0x8000 ? -1 : 1;
    const exponent = (bits >> 10) & 0x1f;
    const mantissa = bits & 0x3ff;
    halfTable[bits] =
      exponent === 0
        ? sign * mantissa * 2 ** -24
        : exponent === 31
          ? mantissa === 0
            ? sign * Number.POSITIVE_INFINITY
            : Number.NaN
          : sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
  }
  return halfTable;
}

/** The fields of one message: { field, wire, start, end (of the whole field), value }. */
function fields(bytes) {
  const out = [];
  let position = 0;
  while (position < bytes.length) {
    const start = position;
    let key;
    [key, position] = readVarint(bytes, position);
    const field = Math.floor(key / 8);
    const wire = key % 8;
    let value;
    if (wire === 0) [value, position] = readVarint(bytes, position);
    else if (wire === 1) position += 8;
    else if (wire === 5) position += 4;
    else if (wire === 2) {
      let length;
      [length, position] = readVarint(bytes, position);
      value = bytes.subarray(position, position + length);
      position += length;
    } else throw new Error(`unsupported wire type ${wire}`);
    if (position > bytes.length) throw new Error("truncated field");
    out.push({ field, wire, start, end: position, value });
  }
  return out;
}

/**
 * A rebuilt message as the list of its byte ranges: nested rewrites keep pointing at the original
 * bytes and at the widened tensors, and only the model is joined into one array, once (joining
 * each level copied the 176 MB of IS-Net's widened weights three times).
 */
class Pieces {
  constructor(parts) {
    this.parts = parts;
    this.length = 0;
    for (const part of parts) this.length += part.length;
  }
}

/**
 * Rebuilds a message with some fields replaced: `rewrite(entry)` returns undefined (keep the
 * bytes as they are), null (drop the field), a Uint8Array or Pieces (new length-delimited value)
 * or a number (new varint value). Answers the original bytes when nothing changed, else Pieces.
 */
function rebuild(bytes, rewrite, extra = []) {
  const parts = [];
  let changed = extra.length > 0;
  const delimited = (field, value) => {
    parts.push(varint(field * 8 + 2), varint(value.length));
    if (value instanceof Pieces) for (const part of value.parts) parts.push(part);
    else parts.push(value);
  };
  for (const entry of fields(bytes)) {
    const next = rewrite(entry);
    if (next === undefined || next === entry.value) {
      parts.push(bytes.subarray(entry.start, entry.end));
      continue;
    }
    changed = true;
    if (next === null) continue;
    if (typeof next === "number") parts.push(varint(entry.field * 8), varint(next));
    else delimited(entry.field, next);
  }
  if (!changed) return bytes;
  for (const [field, value] of extra) delimited(field, value);
  return new Pieces(parts);
}

function tensor(bytes, stats) {
  const entries = fields(bytes);
  if (!entries.some((entry) => entry.field === 2 && entry.value === FLOAT16)) return bytes;
  if (entries.some((entry) => entry.field === 14 && entry.value === 1)) throw new Unsupported();
  const table = halves();
  let values;
  const raw = entries.find((entry) => entry.field === 9);
  if (raw !== undefined) {
    const copy = Uint8Array.prototype.slice.call(raw.value); // a copy, aligned for the 16-bit view
    const bits = new Uint16Array(copy.buffer, 0, copy.length >> 1);
    values = new Float32Array(bits.length);
    const count = bits.length;
    for (let index = 0; index < count; index += 1) values[index] = table[bits[index]];
  } else {
    // float16 values kept in int32_data, one bit pattern per entry (packed or not).
    const patterns = [];
    for (const entry of entries) {
      if (entry.field !== 5) continue;
      if (entry.wire === 0) patterns.push(entry.value);
      else
        for (let position = 0; position < entry.value.length; ) {
          let pattern;
          [pattern, position] = readVarint(entry.value, position);
          patterns.push(pattern);
        }
    }
    values = Float32Array.from(patterns, (pattern) => table[pattern & 0xffff]);
  }
  stats.tensors += 1;
  const data = new Uint8Array(values.buffer);
  return rebuild(
    bytes,
    (entry) => {
      if (entry.field === 2) return FLOAT;
      if (entry.field === 9 || entry.field === 5) return null;
      return undefined;
    },
    [[9, data]],
  );
}

function typeProto(bytes, stats) {
  return rebuild(bytes, (entry) => {
    if (entry.wire !== 2) return undefined;
    // tensor_type and sparse_tensor_type: elem_type 1.
    if (entry.field === 1 || entry.field === 8)
      return rebuild(entry.value, (inner) => {
        if (inner.field !== 1 || inner.wire !== 0 || inner.value !== FLOAT16) return undefined;
        stats.types += 1;
        return FLOAT;
      });
    // sequence_type and optional_type: elem_type (a TypeProto) 1; map_type: value_type 2.
    if (entry.field === 4 || entry.field === 9 || entry.field === 5) {
      const nested = entry.field === 5 ? 2 : 1;
      return rebuild(entry.value, (inner) =>
        inner.field === nested && inner.wire === 2 ? typeProto(inner.value, stats) : undefined,
      );
    }
    return undefined;
  });
}

function valueInfo(bytes, stats) {
  return rebuild(bytes, (entry) =>
    entry.field === 2 && entry.wire === 2 ? typeProto(entry.value, stats) : undefined,
  );
}

function attribute(bytes, stats) {
  const entries = fields(bytes);
  const nameEntry = entries.find((entry) => entry.field === 1 && entry.wire === 2);
  const name = nameEntry === undefined ? "" : Buffer.from(nameEntry.value).toString("utf8");
  return rebuild(bytes, (entry) => {
    if (
      entry.field === 3 &&
      entry.wire === 0 &&
      (name === "to" || name === "dtype") &&
      entry.value === FLOAT16
    ) {
      stats.casts += 1;
      return FLOAT;
    }
    if (entry.wire !== 2) return undefined;
    if (entry.field === 5 || entry.field === 10) return tensor(entry.value, stats);
    if (entry.field === 6 || entry.field === 11) return graph(entry.value, stats);
    return undefined;
  });
}

function node(bytes, stats) {
  return rebuild(bytes, (entry) =>
    entry.field === 5 && entry.wire === 2 ? attribute(entry.value, stats) : undefined,
  );
}

function graph(bytes, stats) {
  return rebuild(bytes, (entry) => {
    if (entry.wire !== 2) return undefined;
    if (entry.field === 1) return node(entry.value, stats);
    if (entry.field === 5) return tensor(entry.value, stats);
    if (entry.field === 15) {
      // A float16 sparse initializer would need its values widened inside SparseTensorProto.
      const values = fields(entry.value).find((inner) => inner.field === 1 && inner.wire === 2);
      if (values !== undefined && tensor(values.value, { tensors: 0 }) !== values.value)
        throw new Unsupported();
      return undefined;
    }
    if (entry.field === 11 || entry.field === 12 || entry.field === 13) return valueInfo(entry.value, stats);
    return undefined;
  });
}

/**
 * The model with its float16 tensors and types widened to float32.
 * @param {Uint8Array} model The ONNX model's bytes.
 * @returns {{ model: Uint8Array, widened: boolean, tensors: number, casts: number, types: number }}
 */
function widenFloat16(model) {
  const stats = { tensors: 0, casts: 0, types: 0 };
  let out;
  try {
    out = rebuild(model, (entry) =>
      entry.field === 7 && entry.wire === 2 ? graph(entry.value, stats) : undefined,
    );
  } catch (error) {
    if (error instanceof Unsupported) return { model, widened: false, tensors: 0, casts: 0, types: 0 };
    throw error;
  }
  if (out === model) return { model, widened: false, ...stats };
  return { model: join(out.parts), widened: true, ...stats };
}

module.exports = { widenFloat16 };
