/**
 * Writes tiny ONNX models (protobuf, by hand) whose output is a known function of the input, so the
 * adapter's pre- and post-processing can be checked exactly: the output map is one input channel.
 */

/** Minimal protobuf writer: varints, length-delimited fields. */
class Writer {
  private readonly bytes: number[] = [];

  varint(value: number | bigint): this {
    let rest = BigInt.asUintN(64, BigInt(value));
    do {
      let byte = Number(rest & 0x7fn);
      rest >>= 7n;
      if (rest !== 0n) byte |= 0x80;
      this.bytes.push(byte);
    } while (rest !== 0n);
    return this;
  }

  int(field: number, value: number): this {
    return this.varint(field << 3).varint(value);
  }

  bytesField(field: number, value: Uint8Array): this {
    this.varint((field << 3) | 2).varint(value.length);
    for (const byte of value) this.bytes.push(byte);
    return this;
  }

  string(field: number, value: string): this {
    return this.bytesField(field, new TextEncoder().encode(value));
  }

  message(field: number, build: (writer: Writer) => void): this {
    const inner = new Writer();
    build(inner);
    return this.bytesField(field, inner.finish());
  }

  finish(): Uint8Array {
    return Uint8Array.from(this.bytes);
  }
}

const FLOAT = 1;
const INT64 = 7;

type Dim = number | string;

function valueInfo(writer: Writer, field: number, name: string, dims: readonly Dim[]): void {
  writer.message(field, (info) => {
    info.string(1, name);
    info.message(2, (type) =>
      type.message(1, (tensor) => {
        tensor.int(1, FLOAT);
        tensor.message(2, (shape) => {
          for (const dim of dims) {
            shape.message(1, (entry) => (typeof dim === "number" ? entry.int(1, dim) : entry.string(2, dim)));
          }
        });
      }),
    );
  });
}

function int64Initializer(writer: Writer, name: string, values: readonly number[]): void {
  writer.message(5, (tensor) => {
    tensor.int(1, values.length);
    tensor.int(2, INT64);
    tensor.string(8, name);
    const raw = new DataView(new ArrayBuffer(values.length * 8));
    for (const [index, value] of values.entries()) raw.setBigInt64(index * 8, BigInt(value), true);
    tensor.bytesField(9, new Uint8Array(raw.buffer));
  });
}

/** Options of {@link channelModel}. */
export interface ChannelModelOptions {
  /** `nchw` ([N, 3, H, W] in, [N, 1, H, W] out) or `nhwc` ([N, H, W, 3] in, [N, H, W, 1] out). */
  layout: "nchw" | "nhwc";
  /** Spatial size; a string makes the dimension symbolic (dynamic). */
  height: Dim;
  width: Dim;
  /** Input channel copied to the output (0 = R). @default 0 */
  channel?: number;
  /** Channels copied (more than 1 makes an output no segmentation model has). @default 1 */
  count?: number;
  /** Channel count of the declared input. @default 3 */
  channels?: number;
  inputName?: string;
  outputName?: string;
}

/** An ONNX model (opset 13) whose single output is one channel of its input: a Slice. */
export function channelModel(options: ChannelModelOptions): Uint8Array {
  const channel = options.channel ?? 0;
  const count = options.count ?? 1;
  const channels = options.channels ?? 3;
  const axis = options.layout === "nchw" ? 1 : 3;
  const inputName = options.inputName ?? "image";
  const outputName = options.outputName ?? "mask";
  const { height, width } = options;
  const inputDims = options.layout === "nchw" ? [1, channels, height, width] : [1, height, width, channels];
  const outputDims = options.layout === "nchw" ? [1, count, height, width] : [1, height, width, count];
  const model = new Writer();
  model.int(1, 8); // ir_version
  model.message(8, (opset) => opset.string(1, "").int(2, 13));
  model.message(7, (graph) => {
    graph.message(1, (node) => {
      for (const input of [inputName, "starts", "ends", "axes"]) node.string(1, input);
      node.string(2, outputName);
      node.string(3, "slice");
      node.string(4, "Slice");
    });
    graph.string(2, "channel");
    int64Initializer(graph, "starts", [channel]);
    int64Initializer(graph, "ends", [channel + count]);
    int64Initializer(graph, "axes", [axis]);
    valueInfo(graph, 11, inputName, inputDims);
    valueInfo(graph, 12, outputName, outputDims);
  });
  return model.finish();
}

const FLOAT16 = 10;

/**
 * A float16 model whose output shows float16 rounding: `y = float(concat(half(x), half(0.5)))`.
 * Concat has a float16 kernel on the CPU, so the values travel as float16: x = 2049 comes out as
 * 2048 (float16 steps by 2 there); widened to float32, as 2049. One float16 initializer, two casts
 * to widen (the other names float32) and a float16 value_info.
 */
export function float16RoundingModel(): Uint8Array {
  const model = new Writer();
  model.int(1, 8);
  model.message(8, (opset) => opset.string(1, "").int(2, 13));
  const cast = (graph: Writer, input: string, output: string, to: number) =>
    graph.message(1, (node) => {
      node.string(1, input).string(2, output).string(3, `cast_${output}`).string(4, "Cast");
      node.message(5, (attribute) => attribute.string(1, "to").int(3, to).int(20, 2)); // type INT
    });
  model.message(7, (graph) => {
    cast(graph, "x", "x16", FLOAT16);
    graph.message(1, (node) => {
      node.string(1, "x16").string(1, "half16").string(2, "both16").string(4, "Concat");
      node.message(5, (attribute) => attribute.string(1, "axis").int(3, 0).int(20, 2));
    });
    cast(graph, "both16", "y", FLOAT);
    graph.string(2, "float16-rounding");
    graph.message(5, (tensor) => {
      tensor.int(1, 1).int(2, FLOAT16).string(8, "half16");
      tensor.bytesField(9, Uint8Array.from([0x00, 0x38])); // 0.5 as float16 (0x3800), little-endian
    });
    valueInfo(graph, 11, "x", [1]);
    valueInfo(graph, 12, "y", [2]);
    graph.message(13, (info) => {
      info.string(1, "x16");
      info.message(2, (type) => type.message(1, (tensor) => tensor.int(1, FLOAT16)));
    });
  });
  return model.finish();
}
