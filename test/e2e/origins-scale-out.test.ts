import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { ListObjectsV2Command, type S3Client } from "@aws-sdk/client-s3";
import { originVariantUrl } from "@pixport/url-signer";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CLI,
  call,
  decode,
  halves,
  isClose,
  mean,
  type PrebuiltNode,
  removeDir,
  stopPrebuiltServer,
  tempDataDir,
} from "./harness.js";
import { startLoopbackOrigin } from "./origin-fixtures.js";
import { type SharedStores, spawnStatelessNode, startSharedStores } from "./shared-stores.js";

const run = promisify(execFile);
const SECRET = "origins-scale-out-secret-0123456789";
const RED: [number, number, number] = [255, 0, 0];
const BLUE: [number, number, number] = [0, 0, 255];

describe("two prebuilt-server processes over one s3rver and one Redis share origin originals and variants", () => {
  let stores: SharedStores;
  let client: S3Client;
  let origin: Awaited<ReturnType<typeof startLoopbackOrigin>>;
  let environment: Record<string, string>;
  let nodes: (PrebuiltNode & { dataDir: string })[] = [];
  const dirs: string[] = [];

  beforeAll(async () => {
    [stores, origin] = await Promise.all([startSharedStores(["private"]), startLoopbackOrigin()]);
    origin.put("/catalog/shoe.png", await halves(80, 40, RED, BLUE));
    client = stores.client;
    const configDir = await tempDataDir();
    dirs.push(configDir);
    const config = path.join(configDir, "pixport.json");
    await writeFile(
      config,
      JSON.stringify({
        delivery: {
          signingKeys: [SECRET],
          origins: {
            cms: { type: "http", baseUrl: `${origin.url}/`, allowPrivateNetwork: true, account: "acct-cms" },
          },
        },
      }),
    );
    environment = { ...stores.environment("private"), PIXPORT_CONFIG: config };
    nodes = await Promise.all([spawnStatelessNode(environment), spawnStatelessNode(environment)]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all(nodes.map(stopPrebuiltServer));
    await origin?.close();
    await stores?.stop();
    await Promise.all([...dirs, ...nodes.map((node) => node.dataDir)].map(removeDir));
  });

  const variant = (node: PrebuiltNode, modifiers: string[]) =>
    originVariantUrl({
      base: "",
      secret: SECRET,
      origin: "cms",
      path: "catalog/shoe.png",
      modifiers,
      ext: "png",
    }).then((target) => call(node.url, "GET", target));
  const listed = async (prefix: string) =>
    (await client.send(new ListObjectsV2Command({ Bucket: "private", Prefix: prefix }))).Contents ?? [];

  it("a miss on A is a HIT on B with one fetch from the origin; a new width on B reuses the original", async () => {
    const [a, b] = [nodes[0]!, nodes[1]!];
    const onA = await variant(a, ["w_40"]);
    expect(onA.status, JSON.stringify(onA.json)).toBe(200);
    expect(onA.headers.get("x-cache")).toBe("MISS");
    const pixels = await decode(onA.bytes);
    expect([pixels.width, pixels.height]).toEqual([40, 20]);
    expect(isClose(mean(pixels, 0, 0, 18, 20), RED)).toBe(true);
    expect(isClose(mean(pixels, 22, 0, 40, 20), BLUE)).toBe(true);
    expect(origin.counts.full.get("/catalog/shoe.png")).toBe(1);

    const onB = await variant(b, ["w_40"]);
    expect(onB.status).toBe(200);
    expect(onB.headers.get("x-cache")).toBe("HIT");
    expect(onB.headers.get("etag")).toBe(onA.headers.get("etag"));

    const narrower = await variant(b, ["w_20"]);
    expect(narrower.status).toBe(200);
    expect(narrower.headers.get("x-cache")).toBe("MISS");
    expect((await decode(narrower.bytes)).width).toBe(20);
    // B made its variant from the original A fetched: the origin saw one fetch and no revalidation.
    expect(origin.counts.full.get("/catalog/shoe.png")).toBe(1);
    expect(origin.counts.notModified.get("/catalog/shoe.png")).toBeUndefined();

    // The original and both variants live on the shared bucket, not on either node's disk.
    expect(await listed("pixport/originals/o/cms/")).toHaveLength(1);
    expect(await listed("pixport/variants/o/cms/")).toHaveLength(2);
    // Both misses count in the origin's account, in the shared counter.
    const cliDir = await tempDataDir();
    dirs.push(cliDir);
    const shown = await run(
      process.execPath,
      [CLI, "accounts", "show", "--account", "acct-cms", "--data-dir", cliDir],
      { env: { ...process.env, ...environment } },
    );
    expect(shown.stdout).toMatch(/Variants computed \(delivery cache misses, not billed\) in \S+: 2/);
  });
});
