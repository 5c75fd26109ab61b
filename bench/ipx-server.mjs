// Reference for cache misses: IPX 3 (unjs/ipx, what Nuxt Image uses) serving /w_{width}/{file} from
// a local directory, through its own node server.
import { createServer } from "node:http";
import { reportPeakRss } from "./lib.mjs";
import { importPeer } from "./peers/index.mjs";

const { createIPX, createIPXNodeServer, ipxFSStorage } = await importPeer("ipx");

reportPeakRss();
const ipx = createIPX({ storage: ipxFSStorage({ dir: process.argv[2] }) });
const server = createServer(createIPXNodeServer(ipx));
server.listen(0, "127.0.0.1", () => console.log(`listening on http://127.0.0.1:${server.address().port}`));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
