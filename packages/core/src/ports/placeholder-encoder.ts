/** Small RGBA pixels handed to a {@link PlaceholderEncoder}. */
export interface PlaceholderPixels {
  width: number;
  height: number;
  /** RGBA, 4 bytes per pixel, not premultiplied. */
  data: Uint8Array;
}

/**
 * Turns a small image (at most 100 x 100) into placeholder strings a page shows while the image
 * loads. The server's adapter uses the maintained `thumbhash` and `blurhash` packages.
 *
 * Semantics: pure and synchronous; the same pixels give the same strings.
 */
export interface PlaceholderEncoder {
  /** The base64 ThumbHash of the pixels. */
  thumbhash(pixels: PlaceholderPixels): string;
  /** The BlurHash of the pixels (4 x 3 components); absent when the adapter has none. */
  blurhash?(pixels: PlaceholderPixels): string;
}
