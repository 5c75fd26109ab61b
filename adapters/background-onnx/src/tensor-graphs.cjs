"use strict";
// The pre- and post-processing of a segmentation model as two tiny ONNX graphs, written here and
// run by onnxruntime next to the model, so no per-pixel work happens in JavaScript:
// - pre: interleaved RGB bytes [1, H, W, 3] (uint8, as libvips hands them over) to the model's
//   normalised float input, (value / 255 - mean) / std per channel, as NCHW or NHWC;
// - post: the model's one-channel map (any rank) to alpha bytes: sigmoid for logits, NaN as 0,
//   an optional per-image min-max stretch (not for a flat map: max - min <= 1e-6), then
//   clamp((p - clip) / (1 - 2 clip), 0, 1) * 255 rounded half up.
// Both are checked value by value against those formulas in test/tensor-graphs.test.ts.
// ONNX field numbers (onnx.proto3): ModelProto ir_version 1, graph 7, opset_import 8 (domain 1,
// version 2); GraphProto node 1, name 2, initializer 5, input 11, output 12; NodeProto input 1,
// output 2, name 3, op_type 4, attribute 5; AttributeProto name 1, i 3, ints 8, type 20;
// TensorProto dims 1, data_type 2, name 8, raw_data 9; ValueInfoProto name 1, type 2; TypeProto
// tensor_type 1 (elem_type 1, shape 2: dim 1: dim_value 1).

const { join, varint } = require("./protobuf-wire.cjs");

const FLOAT = 1;
const UINT8 = 2;
const INT64 = 7;
const ATTRIBUTE_INT = 2;
const ATTRIBUTE_STRING = 3;
const ATTRIBUTE_INTS = 7;

class Message {
  constructor() {
    this.parts = [];
  }

  push(bytes) {
    this.parts.push(bytes);
    return this;
  }

  varint(value) {
    return this.push(varint(value));
  }

  int(field, value) {
    return this.varint(field * 8).varint(value);
  }

  bytes(field, value) {
    return this.varint(field * 8 + 2)
      .varint(value.length)
      .push(value);
  }

  string(field, value) {
    return this.bytes(field, new TextEncoder().encode(value));
  }

  message(field, build) {
    const inner = new Message();
    build(inner);
    return this.bytes(field, inner.finish());
  }

  finish() {
    return join(this.parts);
  }
}

/** Builds one graph: `node(op, inputs, output, attributes?)`, `constant(name, values)`. */
function graphModel(name, input, output, build, opset = 13) {
  const model = new Message();
  model.int(1, 8);
  model.message(8, (entry) => entry.string(1, "").int(2, opset));
  model.message(7, (graph) => {
    let count = 0;
    const node = (op, inputs, out, attributes = []) => {
      graph.message(1, (entry) => {
        for (const name of inputs) entry.string(1, name);
        entry.string(2, out).string(3, `${op}_${count++}`).string(4, op);
        for (const [attribute, value] of attributes) {
          entry.message(5, (attr) => {
            attr.string(1, attribute);
            if (Array.isArray(value)) {
              for (const item of value) attr.int(8, item);
              attr.int(20, ATTRIBUTE_INTS);
            } else if (typeof value === "string") attr.string(4, value).int(20, ATTRIBUTE_STRING);
            else attr.int(3, value).int(20, ATTRIBUTE_INT);
          });
        }
      });
      return out;
    };
    const constant = (name, values, dims = values.length === 1 ? [] : [values.length]) => {
      graph.message(5, (tensor) => {
        for (const dim of dims) tensor.int(1, dim);
        tensor.int(2, FLOAT).string(8, name);
        tensor.bytes(9, new Uint8Array(Float32Array.from(values).buffer));
      });
      return name;
    };
    build(node, constant);
    graph.string(2, name);
    for (const [field, value] of [...[input].flat().map((entry) => [11, entry]), [12, output]]) {
      graph.message(field, (info) => {
        info.string(1, value.name);
        info.message(2, (type) =>
          type.message(1, (tensor) => {
            tensor.int(1, value.type);
            if (value.dims !== undefined)
              tensor.message(2, (shape) => {
                for (const dim of value.dims) shape.message(1, (entry) => entry.int(1, dim));
              });
          }),
        );
      });
    }
  });
  return model.finish();
}

/**
 * RGB bytes [1, H, W, 3] in "rgb", the model's input out of "tensor". For NCHW models the bytes are
 * transposed first, while they are a quarter of the floats' size.
 */
function preprocessModel({ inputWidth: width, inputHeight: height, mean, std, layout }) {
  const nchw = layout === "nchw";
  // Per-channel constants: along the last axis (NHWC), or along axis 1 of NCHW ([3, 1, 1]).
  const dims = nchw ? [3, 1, 1] : [3];
  return graphModel(
    "pixport-preprocess",
    { name: "rgb", type: UINT8, dims: [1, height, width, 3] },
    { name: "tensor", type: FLOAT, dims: nchw ? [1, 3, height, width] : [1, height, width, 3] },
    (node, constant) => {
      const bytes = nchw ? node("Transpose", ["rgb"], "planes", [["perm", [0, 3, 1, 2]]]) : "rgb";
      const values = node("Cast", [bytes], "values", [["to", FLOAT]]);
      const scale = constant(
        "scale",
        std.map((s) => 1 / (255 * s)),
        dims,
      );
      const scaled = node("Mul", [values, scale], "scaled");
      node(
        "Sub",
        [
          scaled,
          constant(
            "shift",
            mean.map((m, i) => m / std[i]),
            dims,
          ),
        ],
        "tensor",
      );
    },
  );
}

/**
 * The model's map (float, any shape) in "map", alpha bytes of the same shape out of "mask". With
 * `resize` ("up" or "down"), the map is [1, 1, h, w] and the mask is scaled (bilinear, half-pixel
 * centres, before rounding; "down" antialiased, as libvips' reduce is: opset 18) to the
 * [1, 1, H, W] given in the int64 input "size".
 */
function postprocessModel({ output, normalize, alphaClip, resize = false }) {
  return graphModel(
    "pixport-postprocess",
    resize
      ? [
          { name: "map", type: FLOAT },
          { name: "size", type: INT64, dims: [4] },
        ]
      : { name: "map", type: FLOAT },
    { name: "mask", type: UINT8 },
    (node, constant) => {
      let value = "map";
      if (output === "logits") value = node("Sigmoid", [value], "probability");
      const zero = constant("zero", [0]);
      value = node("Where", [node("IsNaN", [value], "nan"), zero, value], "number");
      if (normalize === "minmax") {
        const min = node("ReduceMin", [value], "min", [["keepdims", 0]]);
        const max = node("ReduceMax", [value], "max", [["keepdims", 0]]);
        const range = node("Sub", [max, min], "range");
        const stretched = node("Div", [node("Sub", [value, min], "above"), range], "stretched");
        const varied = node("Greater", [range, constant("flat", [1e-6])], "varied");
        value = node("Where", [varied, stretched, value], "normalised");
      }
      const ramp = node(
        "Div",
        [
          node("Sub", [value, constant("clip", [alphaClip])], "shifted"),
          constant("span", [1 - 2 * alphaClip]),
        ],
        "ramp",
      );
      const clamped = node("Clip", [ramp, zero, constant("one", [1])], "clamped");
      let scaled = node("Mul", [clamped, constant("full", [255])], "scaled");
      if (resize)
        scaled = node("Resize", [scaled, "", "", "size"], "resized", [
          ["mode", "linear"],
          ["antialias", resize === "down" ? 1 : 0],
        ]);
      const rounded = node("Floor", [node("Add", [scaled, constant("half", [0.5])], "lifted")], "rounded");
      node("Cast", [rounded], "mask", [["to", UINT8]]);
    },
    resize ? 18 : 13,
  );
}

module.exports = { preprocessModel, postprocessModel };
