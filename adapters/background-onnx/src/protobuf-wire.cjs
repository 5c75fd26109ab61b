"use strict";
// Protocol buffer wire format helpers shared by float16-widening.cjs (reads and rewrites ONNX
// models) and tensor-graphs.cjs (writes small ONNX models): varints and byte concatenation.

/** Reads the varint at `start`: [value, position after it]. Up to 2^53 exactly. */
function readVarint(bytes, start) {
  let value = 0;
  let scale = 1;
  let position = start;
  for (;;) {
    const byte = bytes[position];
    if (byte === undefined) throw new Error("truncated varint");
    position += 1;
    value += (byte & 0x7f) * scale;
    if ((byte & 0x80) === 0) return [value, position];
    scale *= 128;
    if (scale > 2 ** 63) throw new Error("varint too long");
  }
}

/** A non-negative integer as varint bytes. */
function varint(value) {
  const out = [];
  let rest = value;
  do {
    let byte = rest % 128;
    rest = Math.floor(rest / 128);
    if (rest > 0) byte |= 0x80;
    out.push(byte);
  } while (rest > 0);
  return Uint8Array.from(out);
}

/** The parts, one after the other, in a new array. */
function join(parts) {
  let length = 0;
  for (const part of parts) length += part.length;
  const out = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

module.exports = { join, readVarint, varint };
