import { isImagePipelineError } from "@pixport/core";
import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import {
  createRedisImageRepository,
  createRedisKeyStore,
  createRedisLockService,
  createRedisQuotaStore,
  createRedisRateLimiter,
} from "../src/index.js";

/** The INVALID_CONFIGURATION message of a factory call that must throw. */
function refusal(create: () => unknown): string {
  try {
    create();
  } catch (error) {
    expect(isImagePipelineError(error) && error.code).toBe("INVALID_CONFIGURATION");
    return (error as Error).message;
  }
  throw new Error("the factory accepted bad options");
}

describe("Redis adapter options", () => {
  // A client that never connects: the factories only define scripts on it.
  const client = new Redis({ lazyConnect: true, enableOfflineQueue: false });

  it("name each bad field, for every factory", () => {
    expect(refusal(() => createRedisKeyStore({ client: {} as Redis }))).toMatch(
      /createRedisKeyStore options \(client: must be a constructed ioredis client/,
    );
    expect(refusal(() => createRedisQuotaStore({ client, commandTimeoutMs: 0 }))).toMatch(
      /commandTimeoutMs:/,
    );
    expect(refusal(() => createRedisImageRepository({ client, prefix: 7 as unknown as string }))).toMatch(
      /prefix:/,
    );
    expect(refusal(() => createRedisLockService({ client, leaseMs: 10, waitMs: -1 }))).toMatch(
      /leaseMs: .*; waitMs: /,
    );
    expect(refusal(() => createRedisRateLimiter({ client, clock: { now: 5 } as never }))).toMatch(
      /clock: must be a Clock/,
    );
    // A misspelt option is refused rather than ignored.
    expect(
      refusal(() =>
        createRedisKeyStore({ client, prefx: "app:" } as Parameters<typeof createRedisKeyStore>[0]),
      ),
    ).toMatch(/prefx/);
  });

  it("accept a client and defaults", () => {
    expect(typeof createRedisKeyStore({ client }).findByHash).toBe("function");
    expect(typeof createRedisLockService({ client, prefix: "t:" }).withLock).toBe("function");
    client.disconnect();
  });
});
