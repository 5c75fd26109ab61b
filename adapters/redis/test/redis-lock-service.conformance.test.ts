import { randomUUID } from "node:crypto";
import { describeLockServiceConformance } from "@pixport/testing";
import { createRedisLockService } from "../src/index.js";
import { useRedisServer } from "./redis-setup.js";

const { connect } = useRedisServer();

// Every test gets its own key prefix on the shared server; each peer is a second connection
// (another process) on that prefix.
describeLockServiceConformance({
  name: "redis",
  create: async () => {
    const prefix = `t${randomUUID()}:`;
    return {
      locks: createRedisLockService({ client: await connect(), prefix }),
      peer: async () => createRedisLockService({ client: await connect(), prefix }),
      impatient: async () => createRedisLockService({ client: await connect(), prefix, waitMs: 200 }),
      shortLease: async () => createRedisLockService({ client: await connect(), prefix, leaseMs: 300 }),
      // The holder's connection drops inside its task: no renewal and no release reach Redis, as
      // when its process is killed; only the 300 ms lease frees the key.
      abandon: async (key) => {
        const client = await connect();
        const holder = createRedisLockService({ client, prefix, leaseMs: 300 });
        await holder
          .withLock(key, async () => {
            client.disconnect();
          })
          .catch(() => undefined);
      },
    };
  },
});
