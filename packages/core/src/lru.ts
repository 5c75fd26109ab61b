/** Bounds and eviction of an {@link LruMap}. */
export interface LruOptions<K, V> {
  /** Most entries kept. @default unbounded */
  maxEntries?: number;
  /** Most bytes kept, the sum of `sizeOf` over the entries. @default unbounded */
  maxBytes?: number;
  /** What an entry costs against `maxBytes`, read once when it is set. @default 0 */
  sizeOf?: (value: V, key: K) => number;
  /**
   * Called for each entry the bounds push out (never for `delete` or `clear`, which the caller
   * asked for), after it left the map.
   */
  onEvict?: (key: K, value: V) => void;
}

interface Slot<V> {
  value: V;
  bytes: number;
}

/**
 * A map bounded by entry count and/or bytes that drops its least recently used entries first: the
 * one LRU of pixport (decoded sources, cached blobs, variants, remembered signatures). Core code may
 * import nothing but zod, and the caches need what a general-purpose LRU leaves out (ordered
 * iteration for an admission rule, a value replaced without counting as a use), so it is written
 * here once rather than taken from a library.
 *
 * A use is `get` or `set`; `peek`, `has`, `replace` and iteration do not change the order. After a
 * `set`, entries are evicted least recent first while a bound is exceeded, but never the entry just
 * set: a single entry larger than `maxBytes` stays until the next `set` (refuse such entries before
 * `set` where that matters).
 *
 * @example
 * ```ts
 * const hot = new LruMap<string, Uint8Array>({ maxBytes: 64 * 1024 * 1024, sizeOf: (data) => data.byteLength });
 * hot.set(key, bytes);
 * const cached = hot.get(key); // now the most recently used
 * ```
 */
export class LruMap<K, V> {
  readonly #slots = new Map<K, Slot<V>>();
  readonly #options: LruOptions<K, V>;
  #bytes = 0;
  /**
   * The most recently used key, or `undefined` when unknown. A hot key asked again and again
   * (one variant's hits) then costs one map lookup, not a delete and a re-insert each time.
   */
  #newest: K | undefined;

  constructor(options: LruOptions<K, V> = {}) {
    this.#options = options;
  }

  /** Entries kept now. */
  get size(): number {
    return this.#slots.size;
  }

  /** Bytes kept now (the sum of `sizeOf`). */
  get bytes(): number {
    return this.#bytes;
  }

  /** The value of `key`, which becomes the most recently used; `undefined` when absent. */
  get(key: K): V | undefined {
    const slot = this.#slots.get(key);
    if (slot === undefined) return undefined;
    if (key !== this.#newest) {
      this.#slots.delete(key);
      this.#slots.set(key, slot);
      this.#newest = key;
    }
    return slot.value;
  }

  /** The value of `key` without counting a use. */
  peek(key: K): V | undefined {
    return this.#slots.get(key)?.value;
  }

  has(key: K): boolean {
    return this.#slots.has(key);
  }

  /** Sets `key` as the most recently used entry, then evicts past the bounds (see the class). */
  set(key: K, value: V): this {
    this.#remove(key);
    const bytes = Math.max(0, this.#options.sizeOf?.(value, key) ?? 0);
    this.#slots.set(key, { value, bytes });
    this.#newest = key;
    this.#bytes += bytes;
    this.#evict(key);
    return this;
  }

  /**
   * Changes the value of a kept `key` without counting a use (its place stays); returns whether it
   * was kept. Its cost is read again, and the bounds apply as after a `set`.
   */
  replace(key: K, value: V): boolean {
    const slot = this.#slots.get(key);
    if (slot === undefined) return false;
    const bytes = Math.max(0, this.#options.sizeOf?.(value, key) ?? 0);
    this.#bytes += bytes - slot.bytes;
    slot.value = value;
    slot.bytes = bytes;
    this.#evict(key);
    return true;
  }

  /** Removes `key` (no `onEvict`); returns whether it was kept. */
  delete(key: K): boolean {
    return this.#remove(key);
  }

  /** Removes every entry (no `onEvict`). */
  clear(): void {
    this.#slots.clear();
    this.#newest = undefined;
    this.#bytes = 0;
  }

  /** Keys, least recently used first. */
  *keys(): IterableIterator<K> {
    yield* this.#slots.keys();
  }

  /** Values, least recently used first. */
  *values(): IterableIterator<V> {
    for (const slot of this.#slots.values()) yield slot.value;
  }

  /** Entries, least recently used first (iterate over a copy to delete while iterating). */
  *entries(): IterableIterator<[K, V]> {
    for (const [key, slot] of this.#slots) yield [key, slot.value];
  }

  [Symbol.iterator](): IterableIterator<[K, V]> {
    return this.entries();
  }

  #remove(key: K): boolean {
    const slot = this.#slots.get(key);
    if (slot === undefined) return false;
    this.#slots.delete(key);
    if (key === this.#newest) this.#newest = undefined;
    this.#bytes -= slot.bytes;
    return true;
  }

  /** Evicts least recent first while over a bound, sparing `spared` (the entry just written). */
  #evict(spared: K): void {
    const maxEntries = this.#options.maxEntries ?? Number.POSITIVE_INFINITY;
    const maxBytes = this.#options.maxBytes ?? Number.POSITIVE_INFINITY;
    while (this.#slots.size > maxEntries || this.#bytes > maxBytes) {
      let victim: { key: K; slot: Slot<V> } | undefined;
      for (const [key, slot] of this.#slots) {
        if (key === spared) continue;
        victim = { key, slot };
        break;
      }
      if (victim === undefined) return;
      this.#slots.delete(victim.key);
      if (victim.key === this.#newest) this.#newest = undefined;
      this.#bytes -= victim.slot.bytes;
      this.#options.onEvict?.(victim.key, victim.slot.value);
    }
  }
}
