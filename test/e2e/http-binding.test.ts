import type { PixportServer } from "@pixport/server";
import { createFetchDriver, describeHttpBindingConformance } from "@pixport/testing";
import { newKey, removeDir, startServer, tempDataDir } from "./harness.js";

// The HTTP contract suite over the prebuilt server (Express, filesystem, sharp) on a real socket.
// Unlike a bare binding, the server also serves the published copies, so the suite checks them too.
let server: PixportServer | undefined;
let dataDir: string | undefined;

describeHttpBindingConformance({
  name: "prebuilt server (socket)",
  setup: async () => {
    dataDir = await tempDataDir();
    const started = await startServer(dataDir);
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
