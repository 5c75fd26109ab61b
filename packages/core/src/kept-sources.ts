/** A source that is not kept decoded (animated, 16-bit, a colour space other than sRGB or grey, too big). */
export const NOT_KEPT = Symbol("not kept");

/**
 * Decoded sources kept between requests by a codec, by the request's `sourceKey` (the sharp and
 * jimp codecs use it; `data.byteLength` is what an entry costs), least recently used out
 * first past `maxBytes`; `createCachingBlobStore` keeps stored bytes by the same rule. A key is decoded into the cache on its second use among the last
 * `recentKeys` keys seen, so an image transformed once costs nothing more than before; a source
 * larger than a quarter of `maxBytes` is never kept (a few big images cannot flush the rest).
 * Concurrent first uses of one key decode once.
 */
export class SourceCache<Decoded extends { data: { byteLength: number } }> {
  readonly #entries = new Map<string, Decoded | typeof NOT_KEPT>();
  readonly #seen = new Map<string, true>();
  readonly #decoding = new Map<string, Promise<Decoded | typeof NOT_KEPT>>();
  #bytes = 0;

  constructor(
    readonly maxBytes: number,
    readonly recentKeys = 1024,
  ) {}

  /** Bytes of decoded pixels held now. */
  get bytes(): number {
    return this.#bytes;
  }

  /**
   * The decoded source of `key`: from the cache, or from `decode` when the key was seen recently
   * (then kept), or `null` when it is the key's first use (the caller decodes as usual).
   */
  async get(key: string, decode: () => Promise<Decoded | typeof NOT_KEPT>): Promise<Decoded | null> {
    const entry = this.#entries.get(key);
    if (entry !== undefined) {
      this.#entries.delete(key);
      this.#entries.set(key, entry);
      return entry === NOT_KEPT ? null : entry;
    }
    if (!this.#seen.has(key)) {
      this.#seen.set(key, true);
      if (this.#seen.size > this.recentKeys) this.#seen.delete(this.#seen.keys().next().value as string);
      return null;
    }
    let decoding = this.#decoding.get(key);
    if (decoding === undefined) {
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
    return decoded === NOT_KEPT ? null : decoded;
  }

  /** The kept source of `key`, if any, without counting a use or refreshing its place. */
  peek(key: string): Decoded | null {
    const entry = this.#entries.get(key);
    return entry === undefined || entry === NOT_KEPT ? null : entry;
  }

  /** Drops `key`: its kept source, its recent use, and a decode of it still running. */
  forget(key: string): void {
    this.#seen.delete(key);
    this.#decoding.delete(key);
    const entry = this.#entries.get(key);
    if (entry === undefined) return;
    this.#entries.delete(key);
    if (entry !== NOT_KEPT) this.#bytes -= entry.data.byteLength;
  }

  /** Whether a source of these dimensions could be kept at all (check it before decoding). */
  fits(width: number, height: number, channels: number): boolean {
    return width * height * channels <= this.maxBytes / 4;
  }

  #keep(key: string, decoded: Decoded | typeof NOT_KEPT): void {
    this.#seen.delete(key);
    if (decoded === NOT_KEPT || decoded.data.byteLength > this.maxBytes / 4) {
      // Remembered (costing no pixels) so the source is not probed again on every use.
      this.#entries.set(key, NOT_KEPT);
    } else {
      this.#entries.set(key, decoded);
      this.#bytes += decoded.data.byteLength;
    }
    for (const [oldest, value] of this.#entries) {
      if (this.#bytes <= this.maxBytes && this.#entries.size <= this.recentKeys) break;
      this.#entries.delete(oldest);
      if (value !== NOT_KEPT) this.#bytes -= value.data.byteLength;
    }
  }
}
