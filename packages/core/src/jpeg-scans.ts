/**
 * Counts the scans (SOS segments) of a JPEG by walking its markers, without decoding: a baseline
 * JPEG has one scan per component group, a usual progressive one about 10. A progressive JPEG of a
 * few hundred KB can carry thousands of valid scans, and every scan makes the decoder revisit the
 * whole image, so the count bounds the decoding cost before any pixel is decoded.
 *
 * Stops counting once `stopAfter` scans were seen (the caller only needs to know it is over its
 * cap). Returns `null` when the bytes are not a JPEG marker stream.
 */
export function countJpegScans(bytes: Uint8Array, stopAfter = Number.POSITIVE_INFINITY): number | null {
  if (bytes.length < 4 || bytes[0] !== 0xff || bytes[1] !== 0xd8) return null;
  let scans = 0;
  let offset = 2;
  while (offset + 1 < bytes.length) {
    if (bytes[offset] !== 0xff) return scans; // not at a marker: stop where the structure ends
    const marker = bytes[offset + 1] as number;
    if (marker === 0xff) {
      offset += 1; // fill byte
      continue;
    }
    offset += 2;
    if (marker === 0xd9) return scans; // EOI
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) continue; // TEM, RSTn: no length
    if (offset + 1 >= bytes.length) return scans;
    const length = ((bytes[offset] as number) << 8) | (bytes[offset + 1] as number);
    if (length < 2) return scans;
    offset += length;
    if (marker !== 0xda) continue;
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
  return scans;
}
