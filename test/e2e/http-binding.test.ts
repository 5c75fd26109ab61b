import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import type { PixportServer } from "@pixport/server";
import { createFetchDriver, describeHttpBindingConformance } from "@pixport/testing";
import { CODECS, newKey, removeDir, startServer, tempDataDir } from "./harness.js";

// The HTTP contract suite over the prebuilt server (Express, filesystem) on a real socket, once per
// codec. Unlike a bare binding, the server also serves the published copies, so the suite checks
// them too. (This replaces the earlier hand-written test/e2e/api.test.ts, whose assertions the suite
// carries.)
const ORIGIN_SECRET = "prebuilt-binding-origin-secret-0123456789";

for (const codec of CODECS) {
  let server: PixportServer | undefined;
  let dataDir: string | undefined;
  describeHttpBindingConformance({
    name: `prebuilt server (socket, ${codec})`,
    setup: async () => {
      dataDir = await tempDataDir();
      // The suite's origin images: an fs origin beside the data directory.
      const originDir = path.join(dataDir, "origin");
      await mkdir(originDir);
      const started = await startServer(dataDir, {
        codec,
        delivery: {
          signingKeys: [ORIGIN_SECRET],
          origins: { binding: { type: "fs", directory: originDir } },
        },
      });
      server = started;
      const fetchAbsolute = createFetchDriver("");
      return {
        send: createFetchDriver(started.url),
        baseUrl: started.url,
        createKey: (kind, accountId) => newKey(started, kind, accountId),
        publicStorageBaseUrl: started.url,
        origin: {
          name: "binding",
          secret: ORIGIN_SECRET,
          put: async (file, data) => {
            await mkdir(path.dirname(path.join(originDir, file)), { recursive: true });
            await writeFile(path.join(originDir, file), data);
          },
        },
        fetchPublic: (url, headers = {}) => fetchAbsolute({ method: "GET", path: url, headers }),
      };
    },
    teardown: async () => {
      await server?.close();
      if (dataDir !== undefined) await removeDir(dataDir);
    },
  });
}
