import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { request } from "node:http";
import { promisify } from "node:util";
import { HeadObjectCommand, ListObjectsV2Command, type S3Client } from "@aws-sdk/client-s3";
import type { ImageRecord } from "@pixport/core";
import { variantUrl } from "@pixport/url-signer";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CLI,
  call,
  decode,
  halves,
  type PrebuiltNode,
  photo,
  removeDir,
  stopPrebuiltServer,
  tempDataDir,
  upload,
  uploadForm,
} from "./harness.js";
import { type SharedStores, spawnStatelessNode, startSharedStores } from "./shared-stores.js";

const run = promisify(execFile);
const CDN = "https://cdn.pixport.test";
const DELIVERY_KEY = "scale-out-delivery-secret-0123456789";

const stop = stopPrebuiltServer;

describe("two stateless prebuilt-server processes over one S3 (s3rver) and one Redis", () => {
  let stores: SharedStores;
  let client: S3Client;
  let redisClient: Redis;
  let environment: Record<string, string>;
  let nodes: (PrebuiltNode & { dataDir: string })[] = [];
  const dirs: string[] = [];

  const cli = async (...args: string[]) => {
    const dataDir = await tempDataDir();
    dirs.push(dataDir);
    return (
      await run(process.execPath, [CLI, ...args, "--data-dir", dataDir], {
        env: { ...process.env, ...environment },
      })
    ).stdout.trim();
  };
  const liveKey = async (account: string) => {
    await cli("accounts", "upgrade", "--account", account);
    return cli("keys", "create", "--kind", "live", "--account", account);
  };
  const records = async (): Promise<ImageRecord[]> => {
    const keys = await redisClient.keys("pixport:{images}:image:*");
    const values = keys.length === 0 ? [] : await redisClient.mget(keys);
    return values.map((value) => JSON.parse(value!) as ImageRecord);
  };
  const objectExists = async (bucket: string, key: string) =>
    client.send(new HeadObjectCommand({ Bucket: bucket, Key: key })).then(
      () => true,
      (error: { $metadata?: { httpStatusCode?: number } }) => {
        if (error.$metadata?.httpStatusCode === 404) return false;
        throw error;
      },
    );

  beforeAll(async () => {
    if (!existsSync(CLI))
      throw new Error(`${CLI} is missing: run \`pnpm build\` first (the test script does).`);
    stores = await startSharedStores(["originals", "cdn-origin"]);
    client = stores.client;
    redisClient = new Redis(stores.redis.url);
    environment = {
      ...stores.environment("originals"),
      PIXPORT_S3_PUBLIC_BUCKET: "cdn-origin",
      PIXPORT_PUBLIC_STORAGE_BASE_URL: CDN,
      PIXPORT_DELIVERY_SIGNING_KEYS: DELIVERY_KEY,
    };
    nodes = await Promise.all([spawnStatelessNode(environment), spawnStatelessNode(environment)]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all(nodes.map(stop));
    redisClient?.disconnect();
    await stores?.stop();
    await Promise.all([...dirs, ...nodes.map((node) => node.dataDir)].map(removeDir));
  });

  it("uploads on A, transforms on B, lists identically, publishes on A, serves it, unpublishes on B", async () => {
    const a = nodes[0]!;
    const b = nodes[1]!;
    const key = await liveKey("scale");
    const original = await upload(a.url, key, await halves(64, 32, [255, 0, 0], [0, 0, 255]), "wide");
    // The bytes are in the private bucket under the prefix, the record in Redis: nothing on A's disk.
    const stored = (await records()).find((record) => record.id === original.id)!;
    expect(stored.accountId).toBe("scale");
    expect(await objectExists("originals", `pixport/${stored.blobKey}`)).toBe(true);

    const resized = await call(b.url, "POST", `/v1/images/${original.id}/resize`, {
      key,
      json: { width: 32, height: 16 },
    });
    expect(resized.status).toBe(201);
    const derivedBytes = (await call(a.url, "GET", `/v1/images/${resized.json.id}/download`, { key })).bytes;
    expect((await decode(derivedBytes)).width).toBe(32);

    const fromA = await call(a.url, "GET", "/v1/images", { key });
    const fromB = await call(b.url, "GET", "/v1/images", { key });
    expect(fromA.status).toBe(200);
    expect(fromA.json.data.map((item: { id: string }) => item.id)).toEqual([resized.json.id, original.id]);
    expect(fromB.json.data).toEqual(fromA.json.data);

    const published = await call(a.url, "POST", `/v1/images/${resized.json.id}/publish`, { key });
    expect(published.status).toBe(201);
    const publicUrl = new URL(published.json.url);
    expect(`${publicUrl.origin}${publicUrl.pathname}`).toBe(`${CDN}/images/${resized.json.id}.png`);
    // The CDN origin: the public bucket under its prefix, and either node's `/images/` route.
    expect(await objectExists("cdn-origin", `public/images/${resized.json.id}.png`)).toBe(true);
    for (const node of [b, a]) {
      const served = await fetch(`${node.url}${publicUrl.pathname}`);
      expect(served.status).toBe(200);
      expect(served.headers.get("content-type")).toBe("image/png");
      expect(new Uint8Array(await served.arrayBuffer())).toEqual(derivedBytes);
    }
    expect((await call(b.url, "GET", `/v1/images/${resized.json.id}`, { key })).json.url).toBe(
      published.json.url,
    );

    const unpublished = await call(b.url, "POST", `/v1/images/${resized.json.id}/unpublish`, { key });
    expect(unpublished.status).toBeLessThan(300);
    for (const node of [a, b]) expect((await fetch(`${node.url}${publicUrl.pathname}`)).status).toBe(404);
    expect(await objectExists("cdn-origin", `public/images/${resized.json.id}.png`)).toBe(false);
    expect((await call(a.url, "GET", `/v1/images/${resized.json.id}`, { key })).json.url).toBeNull();
  });

  it("a variant computed on A is a HIT on B (shared on S3); unpublish on B ends it on A", async () => {
    const [a, b] = [nodes[0]!, nodes[1]!];
    const key = await liveKey("variants");
    const image = await upload(a.url, key, await halves(80, 40, [255, 0, 0], [0, 0, 255]), "variant");
    expect((await call(a.url, "POST", `/v1/images/${image.id}/publish`, { key })).status).toBe(201);
    const path = async (base: string) =>
      variantUrl({ base, secret: DELIVERY_KEY, imageId: image.id, modifiers: ["w_40"], ext: "webp" });
    const onA = await call(a.url, "GET", await path(a.url));
    expect(onA.status, JSON.stringify(onA.json)).toBe(200);
    expect(onA.headers.get("x-cache")).toBe("MISS");
    const onB = await call(b.url, "GET", await path(b.url));
    expect(onB.status).toBe(200);
    expect(onB.headers.get("x-cache")).toBe("HIT");
    expect(onB.headers.get("etag")).toBe(onA.headers.get("etag"));
    const listed = await client.send(
      new ListObjectsV2Command({ Bucket: "originals", Prefix: `pixport/variants/${image.id}/` }),
    );
    expect(listed.Contents?.length).toBe(1);
    expect((await call(b.url, "POST", `/v1/images/${image.id}/unpublish`, { key })).status).toBe(201);
    expect((await call(a.url, "GET", await path(a.url))).status).toBe(404);
    const after = await client.send(
      new ListObjectsV2Command({ Bucket: "originals", Prefix: `pixport/variants/${image.id}/` }),
    );
    expect(after.Contents ?? []).toEqual([]);
  });

  it("publish on A racing delete or unpublish on B: the public object exists iff the record says published", async () => {
    const [a, b] = [nodes[0]!, nodes[1]!];
    const key = await liveKey("race");
    const png = await halves(8, 8, [255, 0, 0], [0, 0, 255]);
    const outcomes = new Set<string>();
    for (let trial = 0; trial < 16; trial++) {
      const image = await upload(a.url, key, png, `r${trial}`);
      const deleting = trial % 2 === 0;
      const [publish, other] = await Promise.all([
        call(a.url, "POST", `/v1/images/${image.id}/publish`, { key }),
        deleting
          ? call(b.url, "DELETE", `/v1/images/${image.id}`, { key })
          : call(b.url, "POST", `/v1/images/${image.id}/unpublish`, { key }),
      ]);
      const exists = await objectExists("cdn-origin", `public/images/${image.id}.png`);
      if (deleting) {
        expect(other.status).toBe(204);
        expect([201, 404]).toContain(publish.status);
        expect((await call(b.url, "GET", `/v1/images/${image.id}`, { key })).status).toBe(404);
        expect(exists).toBe(false);
      } else {
        expect([publish.status, other.status]).toEqual([201, 201]);
        const record = (await call(a.url, "GET", `/v1/images/${image.id}`, { key })).json;
        expect(exists).toBe(record.url !== null);
        outcomes.add(record.url === null ? "private" : "public");
      }
    }
    expect(outcomes.size).toBeGreaterThan(0);
  }, 90_000);

  it("a node killed (SIGKILL) mid-upload leaves no half-visible image on the other node", async () => {
    const victim = await spawnStatelessNode(environment);
    nodes.push(victim);
    const survivor = nodes[0]!;
    const key = await liveKey("crash");
    const image = await photo(800, 600);

    // One upload whose body stops halfway (the node dies while reading it) ...
    const form = new Response(uploadForm("partial", image));
    const body = new Uint8Array(await form.arrayBuffer());
    const partial = request(`${victim.url}/v1/images/upload`, {
      method: "POST",
      headers: {
        "content-type": form.headers.get("content-type")!,
        "content-length": String(body.byteLength),
        "x-api-key": key,
      },
    });
    const partialDone = new Promise<string>((resolve) => {
      partial.on("error", (error) => resolve(error.message));
      partial.on("response", (response) => resolve(`status ${response.statusCode}`));
    });
    partial.write(body.subarray(0, body.byteLength >> 1));
    // ... and complete uploads racing the kill: it lands when the first of them has answered.
    const complete = Array.from({ length: 6 }, (_, index) =>
      call(victim.url, "POST", "/v1/images/upload", { key, form: uploadForm(`full-${index}`, image) }).then(
        (response) => {
          if (victim.child.exitCode === null && victim.child.signalCode === null)
            victim.child.kill("SIGKILL");
          return response;
        },
        () => null,
      ),
    );
    const answered = (await Promise.all(complete)).filter((response) => response?.status === 201);
    expect(answered.length).toBeGreaterThanOrEqual(1);
    expect(await partialDone).not.toMatch(/^status 2/);
    if (victim.child.signalCode === null) await new Promise((resolve) => victim.child.once("exit", resolve));
    expect(victim.child.signalCode).toBe("SIGKILL");

    const listed = await call(survivor.url, "GET", "/v1/images?take=100", { key });
    expect(listed.status).toBe(200);
    const names = listed.json.data.map((item: { name: string }) => item.name);
    expect(names).not.toContain("partial");
    for (const response of answered) expect(listed.json.data).toContainEqual(response!.json);
    // Every record any node can see is complete: its bytes download and decode in full.
    for (const item of listed.json.data) {
      const download = await call(survivor.url, "GET", `/v1/images/${item.id}/download`, { key });
      expect(download.status).toBe(200);
      expect(download.bytes.byteLength).toBe(item.size);
      expect((await decode(download.bytes)).width).toBe(800);
    }
    // No record anywhere points at a missing or partial object.
    const all = await records();
    expect(all.length).toBeGreaterThan(0);
    for (const record of all) {
      const head = await client.send(
        new HeadObjectCommand({ Bucket: "originals", Key: `pixport/${record.blobKey}` }),
      );
      expect(head.ContentLength).toBe(record.size);
    }
    // Objects without a record (bytes written just before the kill) may remain; S3 PUTs are atomic,
    // so none of them is a partial object either.
    const objects = await client.send(new ListObjectsV2Command({ Bucket: "originals", Prefix: "pixport/" }));
    for (const object of objects.Contents ?? []) expect(object.Size).toBeGreaterThan(0);
  });
});
