import { createHmac, timingSafeEqual } from "node:crypto";
import type { VariantSigner } from "@pixport/core";

/**
 * The server's variant signer: the same signatures as `createVariantSigner` from
 * `@pixport/url-signer` (base64url HMAC-SHA256 of the path; the first secret signs, all verify), on
 * node:crypto. The Web Crypto version is asynchronous per call, which cost a cache miss measurably
 * on this server (bench/delivery.mjs); node:crypto's HMAC is synchronous and takes microseconds.
 */
export function createNodeVariantSigner(secrets: readonly string[]): VariantSigner {
  const keys = secrets.filter((secret) => secret.length > 0).map((secret) => Buffer.from(secret, "utf8"));
  if (keys.length === 0) throw new TypeError("The variant signer needs at least one non-empty secret.");
  const mac = (key: Buffer, path: string) => createHmac("sha256", key).update(path, "utf8").digest();
  return {
    sign: async (path) => mac(keys[0]!, path).toString("base64url"),
    async verify(path, signature) {
      const given = Buffer.from(signature, "base64url");
      // Every secret is tried, so the time does not tell which one matched.
      let valid = false;
      for (const key of keys) {
        const expected = mac(key, path);
        if (given.length === expected.length && timingSafeEqual(given, expected)) valid = true;
      }
      // A signature that is not canonical base64url (padding, other characters) is refused.
      return valid && given.toString("base64url") === signature;
    },
  };
}
