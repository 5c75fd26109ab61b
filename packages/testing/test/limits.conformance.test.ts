import { createMemoryAccountStore, createMemoryQuotaStore, createMemoryRateLimiter } from "@pixport/core";
import {
  describeAccountStoreConformance,
  describeQuotaStoreConformance,
  describeRateLimiterConformance,
} from "../src/index.js";

// The in-memory adapters are process-local: no peer, so the cross-instance cases run on one instance.
describeRateLimiterConformance({
  name: "memory",
  create: async (clock) => ({ limiter: createMemoryRateLimiter({ clock }) }),
});
describeQuotaStoreConformance({ name: "memory", create: async () => ({ store: createMemoryQuotaStore() }) });
describeAccountStoreConformance({
  name: "memory",
  create: async () => ({ store: createMemoryAccountStore() }),
});
