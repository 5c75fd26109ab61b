import { randomUUID } from "node:crypto";
import { PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import {
  Colors,
  describeOriginSourceConformance,
  solidImage,
  startS3Server,
  type TestS3Server,
} from "@pixport/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createS3OriginSource } from "../src/index.js";

let server: TestS3Server;
let client: S3Client;

beforeAll(async () => {
  server = await startS3Server(["media"]);
  client = new S3Client({
    endpoint: server.endpoint,
    region: server.region,
    forcePathStyle: true,
    credentials: server.credentials,
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    maxAttempts: 1,
  });
});

afterAll(async () => {
  client.destroy();
  await server.stop();
});

const put = (Key: string, data: Uint8Array, CacheControl?: string) =>
  client.send(
    new PutObjectCommand({ Bucket: "media", Key, Body: data, ContentType: "image/png", CacheControl }),
  );

describeOriginSourceConformance({
  name: "s3",
  create: async () => {
    const prefix = `o-${randomUUID()}/`;
    return {
      source: createS3OriginSource({ client, bucket: "media", prefix }),
      put: async (path, data) => {
        await put(`${prefix}${path}`, data);
      },
      close: async () => undefined,
    };
  },
});

describe("s3 origin", () => {
  it("takes the object's own Cache-Control max-age as its freshness", async () => {
    await put("fresh/a.png", await solidImage(4, 4, Colors.red, "png"), "public, max-age=120");
    const answer = await createS3OriginSource({ client, bucket: "media" }).get({
      segments: ["fresh", "a.png"],
      maxBytes: 1e6,
    });
    expect(answer.status === "found" && answer.maxAgeSeconds).toBe(120);
  });

  it("reads only under its prefix", async () => {
    await put("outside.png", await solidImage(4, 4, Colors.red, "png"));
    const source = createS3OriginSource({ client, bucket: "media", prefix: "shop/" });
    expect((await source.get({ segments: ["outside.png"], maxBytes: 1e6 })).status).toBe("not-found");
  });
});
