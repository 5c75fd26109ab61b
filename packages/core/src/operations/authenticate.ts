import { ErrorCodes, ImagePipelineError } from "../errors.js";
import { API_KEY_PATTERN, constantTimeEqual, hashApiKey } from "../ids.js";
import type { Caller, PipelineContext } from "./context.js";
import { missingDependency } from "./inputs.js";

const unauthorized = () =>
  new ImagePipelineError(ErrorCodes.UNAUTHORIZED, "A valid API key is required in the x-api-key header.");

/**
 * Resolves an `x-api-key` value to a caller. Missing, malformed, unknown and revoked keys all get
 * the same 401 error. Malformed keys are refused without a store look-up; keys are compared by
 * their SHA-256 digest in constant time.
 */
export async function authenticate(
  context: PipelineContext,
  apiKey: string | null | undefined,
): Promise<Caller> {
  if (context.keys === undefined) throw missingDependency("keys", "authenticate");
  if (typeof apiKey !== "string" || !API_KEY_PATTERN.test(apiKey)) throw unauthorized();
  const hash = await hashApiKey(apiKey);
  const record = await context.keys.findByHash(hash);
  if (record === null || record.revoked === true || !constantTimeEqual(record.hash, hash))
    throw unauthorized();
  return {
    accountId: record.accountId,
    keyKind: record.kind,
    keyId: record.id,
    ...(record.rateLimitPerMinute === undefined ? {} : { rateLimitPerMinute: record.rateLimitPerMinute }),
  };
}
