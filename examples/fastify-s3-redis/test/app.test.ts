import { HeadObjectCommand, S3Client } from "@aws-sdk/client-s3";
import {
  Colors,
  halvesImage,
  startRedisServer,
  startS3Server,
  type TestRedisServer,
  type TestS3Server,
} from "@pixport/testing";
import type { FastifyInstance } from "fastify";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createNode } from "../src/app.js";

let s3Server: TestS3Server;
let redisServer: TestRedisServer;
let s3: S3Client;
const redisClients: Redis[] = [];
let nodes: FastifyInstance[] = [];
let key: string;

async function connectRedis(): Promise<Redis> {
  const client = new Redis(redisServer.url, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
  redisClients.push(client);
  await new Promise((resolve) => client.once("ready", resolve));
  return client;
}

beforeAll(async () => {
  [s3Server, redisServer] = await Promise.all([
    startS3Server(["example-private", "example-public"]),
    startRedisServer(),
  ]);
  s3 = new S3Client({
    endpoint: s3Server.endpoint,
    forcePathStyle: true,
    region: s3Server.region,
    credentials: s3Server.credentials,
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
  // Two nodes, each with its own Redis connection, standing in for two processes.
  const built = await Promise.all(
    [1, 2].map(async () =>
      createNode({
        s3,
        redis: await connectRedis(),
        bucket: "example-private",
        publicBucket: "example-public",
        publicBaseUrl: "https://cdn.example.com",
      }),
    ),
  );
  nodes = built.map((node) => node.app);
  key = await built[0]!.createKey("live", "smoke", { upgraded: true });
});

afterAll(async () => {
  await Promise.all(nodes.map((node) => node.close()));
  for (const client of redisClients) client.disconnect();
  s3?.destroy();
  await Promise.all([s3Server?.stop(), redisServer?.stop()]);
});

describe("example: fastify-s3-redis", () => {
  it("uploads on one node, lists and publishes on the other, with the bytes in S3", async () => {
    const [first, second] = nodes as [FastifyInstance, FastifyInstance];
    const png = await halvesImage(40, 20, Colors.red, Colors.blue);
    const form = new FormData();
    form.append("name", "smoke");
    form.append("image", new Blob([new Uint8Array(png)]), "blob");
    const request = new Request("http://form.invalid/", { method: "POST", body: form });
    const uploaded = await first.inject({
      method: "POST",
      url: "/pixport/v1/images/upload",
      headers: { "x-api-key": key, "content-type": request.headers.get("content-type") ?? "" },
      payload: Buffer.from(await request.arrayBuffer()),
    });
    expect(uploaded.statusCode).toBe(201);
    const image = uploaded.json() as { id: string };

    const list = await second.inject({
      method: "GET",
      url: "/pixport/v1/images",
      headers: { "x-api-key": key },
    });
    expect(list.json().data.map((item: { id: string }) => item.id)).toEqual([image.id]);

    const published = await second.inject({
      method: "POST",
      url: `/pixport/v1/images/${image.id}/publish`,
      headers: { "x-api-key": key },
    });
    expect(published.statusCode).toBe(201);
    expect(published.json().url).toBe(`https://cdn.example.com/images/${image.id}.png`);
    const head = await s3.send(
      new HeadObjectCommand({ Bucket: "example-public", Key: `images/${image.id}.png` }),
    );
    expect(head.ContentType).toBe("image/png");

    const download = await first.inject({
      method: "GET",
      url: `/pixport/v1/images/${image.id}/download`,
      headers: { "x-api-key": key },
    });
    expect([...download.rawPayload.subarray(0, 4)]).toEqual([0x89, 0x50, 0x4e, 0x47]);
  });
});
