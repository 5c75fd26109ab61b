import { createMemoryLockService } from "@pixport/core";
import { describeLockServiceConformance } from "../src/index.js";

// One process: no peer, no lease (its locks die with the process) and no wait limit.
describeLockServiceConformance({
  name: "memory",
  create: async () => ({ locks: createMemoryLockService() }),
});
