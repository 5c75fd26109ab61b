/**
 * Counts the scans (SOS segments) of a JPEG by walking its markers, without decoding: a baseline
 * JPEG has one scan per component group, a usual progressive one about 10. A progressive JPEG of a
 * few hundred KB can carry thousands of valid scans, and every scan makes the decoder revisit the
 * whole image, so the count bounds the decoding cost before any pixel is decoded.
 *
 * The walk is as lenient as libjpeg's marker reader (`next_marker` in jdmarker.c): bytes that are
 * not a marker (junk, or a stuffed `FF 00` outside entropy-coded data) are skipped with a warning
 * there and decoding goes on, so they are skipped here too. Stopping at them would hide every scan
 * behind one junk byte from this count, and not from the decoder.
 *
 * Stops counting once `stopAfter` scans were seen (the caller only needs to know it is over its
 * cap). Returns `null` when the bytes are not a JPEG marker stream.
 */
export function countJpegScans(bytes: Uint8Array, stopAfter = Number.POSITIVE_INFINITY): number | null {
  if (bytes.length < 4 || bytes[0] !== 0xff || bytes[1] !== 0xd8) return null;
  let scans = 0;
  let offset = 2;
  for (;;) {
    const marker = nextMarker(bytes, offset);
    if (marker === null) return scans;
    offset = marker.end;
    const code = marker.code;
    if (code === 0xd9) return scans; // EOI
    if (code === 0x01 || (code >= 0xd0 && code <= 0xd7)) continue; // TEM, RSTn: no length
    if (offset + 1 >= bytes.length) return scans;
    const length = ((bytes[offset] as number) << 8) | (bytes[offset + 1] as number);
    if (length < 2) return scans;
    offset += length;
    if (code !== 0xda) continue;
    scans += 1;
    if (scans >= stopAfter) return scans;
    // Entropy-coded data: runs until a marker that is neither a stuffed 0xFF00 nor a restart marker.
    while (offset + 1 < bytes.length) {
      if (bytes[offset] === 0xff) {
        const next = bytes[offset + 1] as number;
        if (next !== 0x00 && !(next >= 0xd0 && next <= 0xd7) && next !== 0xff) break;
      }
      offset += 1;
    }
  }
}

/**
 * The next marker at or after `offset`, as libjpeg finds it: skips any byte up to an `FF`, any
 * run of `FF` fill bytes, and an `FF 00` pair as junk. `end` is the offset just past the marker
 * code. `null` at the end of the bytes.
 */
function nextMarker(bytes: Uint8Array, offset: number): { code: number; end: number } | null {
  let at = offset;
  for (;;) {
    while (at < bytes.length && bytes[at] !== 0xff) at += 1;
    while (at < bytes.length && bytes[at] === 0xff) at += 1;
    if (at >= bytes.length) return null;
    const code = bytes[at] as number;
    at += 1;
    if (code !== 0x00) return { code, end: at };
  }
}
