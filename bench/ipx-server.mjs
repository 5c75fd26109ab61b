// Reference for cache misses: IPX 3 (unjs/ipx, what Nuxt Image uses) through its own node server,
// serving /w_{width}/{file} from a local directory, or, given an http(s) URL instead of a
// directory, /w_{width}/{url} of images on that host through its HTTP storage (its origin mode).
import { createServer } from "node:http";
import { reportPeakRss } from "./lib.mjs";
import { importPeer } from "./peers/index.mjs";

const { createIPX, createIPXNodeServer, ipxFSStorage, ipxHttpStorage } = await importPeer("ipx");

reportPeakRss();
const source = process.argv[2];
const ipx = /^https?:\/\//.test(source)
  ? createIPX({ httpStorage: ipxHttpStorage({ domains: [new URL(source).hostname] }) })
  : createIPX({ storage: ipxFSStorage({ dir: source }) });
const server = createServer(createIPXNodeServer(ipx));
server.listen(0, "127.0.0.1", () => console.log(`listening on http://127.0.0.1:${server.address().port}`));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
