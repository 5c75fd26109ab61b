import { randomUUID } from "node:crypto";
import { isImagePipelineError } from "@pixport/core";
import {
  describeAccountStoreConformance,
  describeKeyStoreConformance,
  describeQuotaStoreConformance,
  describeRateLimiterConformance,
} from "@pixport/testing";
import { describe, expect, it } from "vitest";
import {
  createRedisAccountStore,
  createRedisKeyStore,
  createRedisQuotaStore,
  createRedisRateLimiter,
} from "../src/index.js";
import { useRedisServer } from "./redis-setup.js";

const { connect, ready, server } = useRedisServer();

// Every test gets its own key prefix on the shared server; `peer` is a second connection (another
// process) on the same prefix.
describeRateLimiterConformance({
  name: "redis",
  create: async (clock) => {
    const prefix = `t${randomUUID()}:`;
    return {
      limiter: createRedisRateLimiter({ client: await connect(), prefix, clock }),
      peer: async () => createRedisRateLimiter({ client: await connect(), prefix, clock }),
    };
  },
});

describeQuotaStoreConformance({
  name: "redis",
  create: async () => {
    const prefix = `t${randomUUID()}:`;
    return {
      store: createRedisQuotaStore({ client: await connect(), prefix }),
      peer: async () => createRedisQuotaStore({ client: await connect(), prefix }),
    };
  },
});

describeAccountStoreConformance({
  name: "redis",
  create: async () => {
    const prefix = `t${randomUUID()}:`;
    return {
      store: createRedisAccountStore({ client: await connect(), prefix }),
      peer: async () => createRedisAccountStore({ client: await connect(), prefix }),
    };
  },
});

const keyStorePrefixes = new WeakMap<object, string>();
describeKeyStoreConformance({
  name: "redis",
  create: async () => {
    const prefix = `t${randomUUID()}:`;
    const store = createRedisKeyStore({ client: await connect(), prefix });
    keyStorePrefixes.set(store, prefix);
    return store;
  },
  peer: async (store) =>
    createRedisKeyStore({ client: await connect(), prefix: keyStorePrefixes.get(store)! }),
});

describe("redis rate limiter on Redis' own clock", () => {
  it("admits exactly the limit from two connections without an injected clock", async () => {
    const prefix = `t${randomUUID()}:`;
    const first = createRedisRateLimiter({ client: await connect(), prefix });
    const second = createRedisRateLimiter({ client: await connect(), prefix });
    const decisions = await Promise.all(
      Array.from({ length: 30 }, (_, index) =>
        (index % 2 ? first : second).consume({ key: "k", limit: 10, windowMs: 60_000 }),
      ),
    );
    expect(decisions.filter((decision) => decision.allowed)).toHaveLength(10);
    const refused = decisions.find((decision) => !decision.allowed)!;
    expect(refused.resetMs).toBeGreaterThan(59_000);
    expect(refused.resetMs).toBeLessThanOrEqual(60_000);
  });
});

describe("redis outage", () => {
  it("fails with STORAGE_UNAVAILABLE within the command timeout while Redis is down, and recovers by itself", async () => {
    const prefix = `t${randomUUID()}:`;
    const client = await connect();
    const quota = createRedisQuotaStore({ client, prefix, commandTimeoutMs: 500 });
    await quota.reserve({ accountId: "a", period: "2026-11", units: 1, limit: 5 });
    await server().stop();
    const started = performance.now();
    const error = await quota
      .reserve({ accountId: "a", period: "2026-11", units: 1, limit: 5 })
      .catch((caught: unknown) => caught);
    expect(isImagePipelineError(error) && error.code).toBe("STORAGE_UNAVAILABLE");
    // Bounded: the command timeout (500 ms) plus scheduling slack, not ioredis' reconnect backoff.
    expect(performance.now() - started).toBeLessThan(2_000);
    await server().restart();
    await ready(client);
    // The data did not persist (no save), but the adapter works again without a new client.
    expect(await quota.reserve({ accountId: "a", period: "2026-11", units: 1, limit: 5 })).toMatchObject({
      granted: true,
    });
  }, 30_000);
});
