import { describe, expect, it } from "vitest";
import { countJpegScans } from "../src/jpeg-scans.js";

/** A segment: marker code, then its 2-byte length (which counts itself) and payload. */
const segment = (code: number, payload: number[] = [0, 0, 0]) => [
  0xff,
  code,
  (payload.length + 2) >> 8,
  (payload.length + 2) & 0xff,
  ...payload,
];
/** A scan: its SOS header, then entropy-coded data with a stuffed FF 00 and a restart marker. */
const scan = () => [...segment(0xda, [1, 1, 0, 0, 63, 0]), 0x12, 0xff, 0x00, 0x34, 0xff, 0xd0, 0x56];
const SOI = [0xff, 0xd8];
const EOI = [0xff, 0xd9];
const HEADER = [...segment(0xe0, [0x4a, 0x46, 0x49, 0x46, 0]), ...segment(0xdb), ...segment(0xc2)];

function jpeg(...parts: number[][]): Uint8Array {
  return Uint8Array.from(parts.flat());
}
const scans = (count: number) => Array.from({ length: count }, scan).flat();

describe("countJpegScans", () => {
  it("counts every SOS segment of a marker stream", () => {
    expect(countJpegScans(jpeg(SOI, HEADER, scans(7), EOI))).toBe(7);
  });

  it("stops once stopAfter scans were seen", () => {
    expect(countJpegScans(jpeg(SOI, HEADER, scans(500), EOI), 101)).toBe(101);
  });

  it("answers null for bytes that are not a JPEG", () => {
    expect(countJpegScans(Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0, 0]))).toBeNull();
  });

  // libjpeg skips what is not a marker with a warning ("extraneous bytes before marker") and
  // decodes on: each of these hid every scan from the count while the decoder still ran them all.
  it.each([
    ["one 0x00 before the first SOS", [0x00]],
    ["a stuffed FF 00 before the first SOS", [0xff, 0x00]],
    ["a run of junk bytes before the first SOS", [0x00, 0x13, 0x37, 0x42, 0x00]],
    ["junk that ends in fill bytes", [0x01, 0x02, 0xff, 0xff]],
  ])("counts the scans behind %s, as the decoder reads them", (_name, junk) => {
    expect(countJpegScans(jpeg(SOI, HEADER, junk, scans(300), EOI), 101)).toBe(101);
  });

  it("counts scans separated by junk between segments", () => {
    const parts = Array.from({ length: 20 }, () => [0x00, 0x00, ...scan()]).flat();
    expect(countJpegScans(jpeg(SOI, HEADER, parts, EOI))).toBe(20);
  });

  it("stops at the end of the bytes when no marker follows", () => {
    expect(countJpegScans(jpeg(SOI, HEADER, scans(2), [0x00, 0x00, 0x00]))).toBe(2);
  });
});
