import type { IdGenerator } from "./ports/id-generator.js";

const LETTERS = "abcdefghijklmnopqrstuvwxyz";
const ALPHANUMERIC = `${LETTERS}0123456789`;
const BASE62 = `ABCDEFGHIJKLMNOPQRSTUVWXYZ${ALPHANUMERIC}`;

/**
 * `length` characters drawn uniformly from `alphabet` with the platform CSPRNG (Web Crypto, so it
 * runs on Node, Lambda and edge runtimes). Rejection sampling avoids modulo bias.
 */
export function randomString(alphabet: string, length: number): string {
  const limit = 256 - (256 % alphabet.length);
  let result = "";
  while (result.length < length) {
    const bytes = globalThis.crypto.getRandomValues(new Uint8Array(length * 2));
    for (const byte of bytes) {
      if (byte < limit && result.length < length) result += alphabet[byte % alphabet.length];
    }
  }
  return result;
}

/**
 * Ids of the form `image_` + a lowercase letter + 23 lowercase letters or digits
 * (about 123 bits of randomness), the shape of the original service's ids.
 *
 * @example
 * ```ts
 * const ids = createRandomIdGenerator();
 * ids.imageId(); // "image_k3v0..." (24 letters or digits)
 * ```
 */
export function createRandomIdGenerator(): IdGenerator {
  return { imageId: () => `image_${randomString(LETTERS, 1)}${randomString(ALPHANUMERIC, 23)}` };
}

/** A new API key: `test_` or `live_` + 32 base62 characters (about 190 bits). */
export function generateApiKey(kind: "test" | "live"): string {
  return `${kind}_${randomString(BASE62, 32)}`;
}

/** A new non-secret record id for keys and accounts: `key_` + 16 lowercase alphanumerics. */
export function generateKeyId(): string {
  return `key_${randomString(ALPHANUMERIC, 16)}`;
}

/** Shape of an API key the server accepts. Anything else is rejected before any store look-up. */
export const API_KEY_PATTERN = /^(test|live)_[A-Za-z0-9]{32,128}$/;

/** SHA-256 of the full key, lowercase hex. Keys are high-entropy, so a fast hash is right here. */
export async function hashApiKey(key: string): Promise<string> {
  const digest = await globalThis.crypto.subtle.digest("SHA-256", new TextEncoder().encode(key));
  return Array.from(new Uint8Array(digest), (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** Compares two strings in time that depends only on their lengths. */
export function constantTimeEqual(a: string, b: string): boolean {
  let difference = a.length ^ b.length;
  const length = Math.max(a.length, b.length);
  for (let index = 0; index < length; index++) {
    difference |= (a.charCodeAt(index) || 0) ^ (b.charCodeAt(index) || 0);
  }
  return difference === 0;
}
