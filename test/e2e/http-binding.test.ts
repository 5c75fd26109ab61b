import type { PixportServer } from "@pixport/server";
import { createFetchDriver, describeHttpBindingConformance } from "@pixport/testing";
import { CODECS, newKey, removeDir, startServer, tempDataDir } from "./harness.js";

// The HTTP contract suite over the prebuilt server (Express, filesystem) on a real socket, once per
// codec. Unlike a bare binding, the server also serves the published copies, so the suite checks
// them too. (This replaces the earlier hand-written test/e2e/api.test.ts, whose assertions the suite
// carries.)
for (const codec of CODECS) {
  let server: PixportServer | undefined;
  let dataDir: string | undefined;
  describeHttpBindingConformance({
    name: `prebuilt server (socket, ${codec})`,
    setup: async () => {
      dataDir = await tempDataDir();
      const started = await startServer(dataDir, { codec });
      server = started;
      const fetchAbsolute = createFetchDriver("");
      return {
        send: createFetchDriver(started.url),
        baseUrl: started.url,
        createKey: (kind, accountId) => newKey(started, kind, accountId),
        publicStorageBaseUrl: started.url,
        fetchPublic: (url, headers = {}) => fetchAbsolute({ method: "GET", path: url, headers }),
      };
    },
    teardown: async () => {
      await server?.close();
      if (dataDir !== undefined) await removeDir(dataDir);
    },
  });
}
