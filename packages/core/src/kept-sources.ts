import { LruMap } from "./lru.js";

/** A source that is not kept decoded (animated, 16-bit, a colour space other than sRGB or grey, too big). */
export const NOT_KEPT = Symbol("not kept");

/** What one use of a key tells {@link SourceCache.get} besides how to decode it. */
export interface SourceUse<Decoded> {
  /**
   * Bytes the decoded source of this use would take (from its header), for the admission rule;
   * unknown (0) counts as nothing, and {@link SourceCache.sized} can tell it after the use.
   */
  bytes?: number;
  /**
   * Whether a kept source serves this use (e.g. it was kept at a reduced size and this use needs
   * more pixels); one that does not is decoded again for this use, under the same rule.
   * @default every kept source serves
   */
  serves?: (kept: Decoded) => boolean;
}

/**
 * Decoded sources kept between requests by a codec, by the request's `sourceKey` (the sharp and
 * jimp codecs use it; `data.byteLength` is what an entry costs), least recently used out first
 * past `maxBytes`; `createCachingBlobStore` keeps stored bytes by the same rule.
 *
 * Admission: a key is decoded into the cache only on a use that follows an earlier use among the
 * last `recentKeys` keys seen (a key's first use costs nothing more than without the cache), and
 * only when it will likely be used again while kept:
 * - when the cache has room for it beside what it holds, or
 * - when its reuse distance fits: the bytes of every other key used since its last use, plus its
 *   own, are at most `maxBytes` ("had everything been kept, would it still be here now?").
 * So one image resized again and again is kept from its second use, and sources that rotate
 * through more bytes than the cache holds do not push each other out (each would go before its
 * next use, and a decode for the cache costs a little more than the decode it replaces): the first
 * of them that fit stay and serve every turn, the others are decoded as without the cache. A
 * source larger than a quarter of `maxBytes` is never kept (a few big images cannot flush the
 * rest). Concurrent admissions of one key decode once.
 */
export class SourceCache<Decoded extends { data: { byteLength: number } }> {
  /** Kept sources (and keys remembered as not kept, costing nothing), least recent first. */
  readonly #entries: LruMap<string, Decoded | typeof NOT_KEPT>;
  /** Every key used lately, least recent first, with its bytes (kept, or estimated at its last use). */
  readonly #recent: LruMap<string, number>;
  readonly #decoding = new Map<string, Promise<Decoded | typeof NOT_KEPT>>();

  constructor(
    readonly maxBytes: number,
    readonly recentKeys = 1024,
  ) {
    this.#entries = new LruMap({
      maxBytes,
      maxEntries: recentKeys,
      sizeOf: (entry) => (entry === NOT_KEPT ? 0 : entry.data.byteLength),
    });
    // The least recent key is forgotten (a kept source stays until the byte bound pushes it out).
    this.#recent = new LruMap({ maxEntries: recentKeys });
  }

  /** Bytes of decoded pixels held now. */
  get bytes(): number {
    return this.#entries.bytes;
  }

  /** How many sources are kept decoded now. */
  get size(): number {
    let count = 0;
    for (const entry of this.#entries.values()) if (entry !== NOT_KEPT) count += 1;
    return count;
  }

  /**
   * The decoded source of `key`: from the cache, or from `decode` when the admission rule keeps it
   * (then kept), or `null` when it is not kept (the caller decodes as usual).
   */
  async get(
    key: string,
    decode: () => Promise<Decoded | typeof NOT_KEPT>,
    use: SourceUse<Decoded> = {},
  ): Promise<Decoded | null> {
    const entry = this.#entries.peek(key);
    if (entry === NOT_KEPT) {
      this.#recent.set(key, 0);
      return null;
    }
    if (entry !== undefined && (use.serves === undefined || use.serves(entry))) {
      this.#entries.get(key);
      this.#recent.set(key, entry.data.byteLength);
      return entry;
    }
    let decoding = this.#decoding.get(key);
    if (decoding === undefined) {
      const bytes = Math.max(0, use.bytes ?? this.#recent.peek(key) ?? 0);
      const admitted = this.#admits(key, bytes);
      this.#recent.set(key, Math.max(bytes, entry?.data.byteLength ?? 0));
      if (!admitted) return null;
      decoding = decode();
      this.#decoding.set(key, decoding);
      const started = decoding;
      // A key forgotten while it was decoded (a deleted blob) is not kept afterwards.
      decoding.then(
        (decoded) => {
          if (this.#decoding.get(key) !== started) return;
          this.#decoding.delete(key);
          this.#keep(key, decoded);
        },
        () => {
          if (this.#decoding.get(key) === started) this.#decoding.delete(key);
        },
      );
    }
    // A source over the bound was decoded for this use anyway: it serves it, and is not kept.
    const decoded = await decoding;
    if (decoded === NOT_KEPT || (use.serves !== undefined && !use.serves(decoded))) return null;
    return decoded;
  }

  /** The kept source of `key`, if any, without counting a use or refreshing its place. */
  peek(key: string): Decoded | null {
    const entry = this.#entries.peek(key);
    return entry === undefined || entry === NOT_KEPT ? null : entry;
  }

  /** Records the bytes of `key`'s source once known after a use (when the use could not tell them). */
  sized(key: string, bytes: number): void {
    if (!this.#entries.has(key)) this.#recent.replace(key, Math.max(0, bytes));
  }

  /** Drops `key`: its kept source, its recent use, and a decode of it still running. */
  forget(key: string): void {
    this.#recent.delete(key);
    this.#decoding.delete(key);
    this.#entries.delete(key);
  }

  /** Whether a source of these dimensions could be kept at all (check it before decoding). */
  fits(width: number, height: number, channels: number): boolean {
    return width * height * channels <= this.maxBytes / 4;
  }

  /**
   * The admission rule: `key` was used lately, and the bytes of the keys used since, with its own,
   * fit in the cache. Walks the recent keys (at most `recentKeys`), only on a use that would decode.
   */
  #admits(key: string, bytes: number): boolean {
    if (bytes > this.maxBytes / 4 || !this.#recent.has(key)) return false;
    // Room to spare pushes nothing out: sources that rotate through a little more than the cache
    // holds keep the first of them that fit (each used again on every turn), not none.
    const kept = this.#entries.peek(key);
    const replaced = kept === undefined || kept === NOT_KEPT ? 0 : kept.data.byteLength;
    if (this.#entries.bytes - replaced + bytes <= this.maxBytes) return true;
    let since = 0;
    let after = false;
    for (const [other, otherBytes] of this.#recent) {
      if (after) since += otherBytes;
      else after = other === key;
    }
    return since + bytes <= this.maxBytes;
  }

  /** Keeps `decoded` as the most recent entry; the byte and key bounds push the least recent out. */
  #keep(key: string, decoded: Decoded | typeof NOT_KEPT): void {
    if (decoded === NOT_KEPT || decoded.data.byteLength > this.maxBytes / 4) {
      // Remembered (costing no pixels) so the source is not probed again on every use.
      this.#entries.set(key, NOT_KEPT);
    } else {
      this.#entries.set(key, decoded);
      this.#recent.replace(key, decoded.data.byteLength);
    }
  }
}
