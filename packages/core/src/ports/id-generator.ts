/** Generates resource ids. */
export interface IdGenerator {
  /**
   * A new image id: `image_` + 24 lowercase ASCII letters or digits, the first a letter. Ids must be
   * unguessable (at least 120 bits of randomness) because they appear in public URLs.
   */
  imageId(): string;
}
