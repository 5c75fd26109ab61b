/**
 * Stores the bytes of delivered variants, keyed by image and variant.
 *
 * Semantics: `get` answers what `put` stored under the same image id and key, or `null` (never an
 * error for a missing entry; an entry may disappear at any time, the cache is bounded). `removeImage`
 * removes every variant of an image; afterwards `get` answers `null` for each.
 */
export interface VariantCache {
  get(imageId: string, key: string): Promise<CachedVariant | null>;
  put(imageId: string, key: string, variant: CachedVariant): Promise<void>;
  removeImage(imageId: string): Promise<void>;
}

/** One cached variant. */
export interface CachedVariant {
  data: Uint8Array;
  contentType: string;
}

/**
 * Signs and verifies the signed part of variant URLs (`/{image_id}/{canonical modifiers}.{ext}`).
 * `@pixport/url-signer`'s `createVariantSigner(keys)` is the implementation: HMAC-SHA256, the first
 * key signs, every key verifies (rotation).
 */
export interface VariantSigner {
  sign(path: string): Promise<string>;
  verify(path: string, signature: string): Promise<boolean>;
}
