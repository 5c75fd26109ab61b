/**
 * A greyscale page's pixels as whole 32-bit words, a view on the same memory, for the scans that
 * read four pixels at a time (the contrast histogram and table, the paper skips of `ink.ts`).
 * `words[i]` holds pixels `lead + 4 * i` to `lead + 4 * i + 3`: a typed array view starts at a
 * multiple of 4 bytes and `grey` may not (a subarray, a pooled Buffer), so the `lead` pixels
 * before it (fewer when the page is shorter) and those after its last whole word are read one by
 * one by the caller.
 */
export function pageWords(grey: Uint8Array): { lead: number; words: Int32Array } {
  const lead = (4 - (grey.byteOffset % 4)) % 4;
  const count = grey.length > lead ? Math.floor((grey.length - lead) / 4) : 0;
  const words = count > 0 ? new Int32Array(grey.buffer, grey.byteOffset + lead, count) : new Int32Array(0);
  return { lead, words };
}
