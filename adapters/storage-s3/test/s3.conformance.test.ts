import { randomUUID } from "node:crypto";
import { GetObjectCommand, HeadObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { isImagePipelineError } from "@pixport/core";
import { FILE_EXTENSIONS, MIME_TYPES } from "@pixport/core/adapter-kit";
import {
  describeBlobStoreConformance,
  describeImagePublisherConformance,
  startS3Server,
  type TestS3Server,
} from "@pixport/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createS3BlobStore, createS3Publisher } from "../src/index.js";

let server: TestS3Server;
const clients: S3Client[] = [];

function connect(endpoint = server.endpoint): S3Client {
  const client = new S3Client({
    endpoint,
    region: server.region,
    forcePathStyle: true,
    credentials: server.credentials,
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    maxAttempts: 1,
  });
  clients.push(client);
  return client;
}

beforeAll(async () => {
  server = await startS3Server(["private", "public"]);
});

afterAll(async () => {
  for (const client of clients) client.destroy();
  await server.stop();
});

// Every test gets its own prefix in the shared bucket; `peer` is a second S3Client (another process)
// on the same bucket and prefix.
const prefixes = new WeakMap<object, string>();
describeBlobStoreConformance({
  name: "s3",
  create: () => {
    const prefix = `t-${randomUUID()}/`;
    const store = createS3BlobStore({ client: connect(), bucket: "private", prefix });
    prefixes.set(store, prefix);
    return store;
  },
  peer: (store) => createS3BlobStore({ client: connect(), bucket: "private", prefix: prefixes.get(store)! }),
  // s3rver (the test double) writes an object's file in place and its metadata file separately,
  // so racing PUTs of one key can interleave bytes (seen: 1 run in about 5 on 2 busy cores) or
  // pair one PUT's bytes with another's content type. AWS S3 PUTs are atomic; the adapter sends
  // each put as one PutObject and adds nothing that could split it.
  capabilities: { atomicPuts: false },
  extraTests: (context) => {
    it("stores the content type and Cache-Control as object headers", async () => {
      await context.store.put("a/b.png", new Uint8Array([1, 2, 3]), {
        contentType: "image/png",
        cacheControl: "public, max-age=60",
      });
      expect(await context.store.stat("a/b.png")).toEqual({
        size: 3,
        contentType: "image/png",
        cacheControl: "public, max-age=60",
      });
    });
  },
});

describe("s3 blob store errors", () => {
  it("retries a bounded number of times, then throws STORAGE_UNAVAILABLE with retry advice", async () => {
    let attempts = 0;
    const failing = connect();
    failing.middlewareStack.add(
      () => async () => {
        attempts += 1;
        throw Object.assign(new Error("Slow down"), {
          name: "SlowDown",
          $metadata: { httpStatusCode: 503 },
        });
      },
      { step: "finalizeRequest", priority: "high" },
    );
    const store = createS3BlobStore({ client: failing, bucket: "private", maxAttempts: 3, retryDelayMs: 1 });
    const error = await store.get("x").catch((caught: unknown) => caught);
    expect(isImagePipelineError(error) && error.code).toBe("STORAGE_UNAVAILABLE");
    expect(isImagePipelineError(error) && error.retryAfterSeconds).toBe(1);
    expect(attempts).toBe(3);
  });

  it("does not retry a non-retryable error (missing bucket) and still translates it", async () => {
    const store = createS3BlobStore({ client: connect(), bucket: "no-such-bucket", retryDelayMs: 1 });
    const error = await store
      .put("x", new Uint8Array([1]), { contentType: "image/png" })
      .catch((caught: unknown) => caught);
    expect(isImagePipelineError(error) && error.code).toBe("STORAGE_UNAVAILABLE");
    expect((error as Error).message).toMatch(/NoSuchBucket/);
  });

  it("turns a refused connection into STORAGE_UNAVAILABLE", async () => {
    const store = createS3BlobStore({
      client: connect("http://127.0.0.1:1"),
      bucket: "private",
      maxAttempts: 2,
      retryDelayMs: 1,
    });
    const error = await store.stat("x").catch((caught: unknown) => caught);
    expect(isImagePipelineError(error) && error.code).toBe("STORAGE_UNAVAILABLE");
  });

  it("refuses an invalid prefix with INVALID_CONFIGURATION", () => {
    expect(() => createS3BlobStore({ client: connect(), bucket: "private", prefix: "no-slash" })).toThrow(
      /end with "\/"/,
    );
  });

  it("checks every option of both factories and names each bad field", () => {
    const refusal = (create: () => unknown) => {
      try {
        create();
      } catch (error) {
        expect(isImagePipelineError(error) && error.code).toBe("INVALID_CONFIGURATION");
        return (error as Error).message;
      }
      throw new Error("accepted bad options");
    };
    expect(refusal(() => createS3BlobStore({ client: {} as never, bucket: "", maxAttempts: 0 }))).toMatch(
      /client: must be a constructed S3Client.*; bucket: .*; maxAttempts: /,
    );
    expect(
      refusal(() => createS3BlobStore({ client: connect(), bucket: "b", bukket: "x" } as never)),
    ).toMatch(/bukket/);
    expect(
      refusal(() =>
        createS3Publisher({
          client: connect(),
          source: { bucket: "private" },
          target: { bucket: "public", prefix: "pub" },
          publicBaseUrl: "cdn.example.com",
          purge: (() => undefined) as never,
        }),
      ),
    ).toMatch(/target\.prefix: must be empty or end with "\/".*publicBaseUrl: .*purge: must be a CdnPurger/);
  });
});

describe("s3 publisher", () => {
  it("copies to the public bucket, returns the public URL, unpublishes idempotently and purges", async () => {
    const client = connect();
    const prefix = `p-${randomUUID()}/`;
    const source = createS3BlobStore({ client, bucket: "private", prefix });
    const bytes = new Uint8Array([137, 80, 78, 71, 1, 2, 3]);
    await source.put("images/src.png", bytes, { contentType: "application/octet-stream" });
    const purged: string[][] = [];
    const publisher = createS3Publisher({
      client,
      source: { bucket: "private", prefix },
      target: { bucket: "public", prefix: "cdn/" },
      publicBaseUrl: "https://cdn.example.com/",
      purge: { purge: async (urls) => void purged.push(urls) },
    });
    const request = { id: `image_${"a".repeat(24)}`, format: "png" as const, blobKey: "images/src.png" };
    const url = await publisher.publish(request);
    expect(url).toBe(`https://cdn.example.com/images/${request.id}.png`);
    expect(await publisher.publish(request)).toBe(url);
    const key = `cdn/images/${request.id}.png`;
    const head = await client.send(new HeadObjectCommand({ Bucket: "public", Key: key }));
    expect(head.ContentType).toBe(MIME_TYPES.png);
    expect(head.CacheControl).toBe("public, max-age=31536000, immutable");
    const object = await client.send(new GetObjectCommand({ Bucket: "public", Key: key }));
    expect(await object.Body?.transformToByteArray()).toEqual(bytes);

    await publisher.unpublish(request);
    await publisher.unpublish(request);
    const gone = await client.send(new HeadObjectCommand({ Bucket: "public", Key: key })).catch((e) => e);
    expect((gone as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode).toBe(404);
    expect(purged).toEqual([[url], [url]]);
  });

  it("fails publishing when the private bytes are missing, and translates purge failures", async () => {
    const client = connect();
    await client.send(
      new PutObjectCommand({ Bucket: "public", Key: "images/x.png", Body: new Uint8Array([1]) }),
    );
    const publisher = createS3Publisher({
      client,
      source: { bucket: "private", prefix: `m-${randomUUID()}/` },
      target: { bucket: "public" },
      publicBaseUrl: "https://cdn.example.com",
      purge: {
        purge: async () => {
          throw new Error("purge down");
        },
      },
    });
    const id = `image_${"b".repeat(24)}`;
    const missing = await publisher
      .publish({ id, format: "png", blobKey: "images/none.png" })
      .catch((caught: unknown) => caught);
    expect(isImagePipelineError(missing) && missing.code).toBe("INTERNAL");
    const purge = await publisher.unpublish({ id, format: "png" }).catch((caught: unknown) => caught);
    expect(isImagePipelineError(purge) && purge.code).toBe("STORAGE_UNAVAILABLE");
  });
});

// Server-side CopyObject between two buckets of s3rver; every test on its own prefixes.
describeImagePublisherConformance({
  name: "s3 publisher",
  create: async () => {
    const client = connect();
    const prefix = `pc-${randomUUID()}/`;
    const publicPrefix = `pub-${randomUUID()}/`;
    const publicBaseUrl = "https://cdn.example.com";
    return {
      source: createS3BlobStore({ client, bucket: "private", prefix }),
      publicBaseUrl,
      publisher: createS3Publisher({
        client,
        source: { bucket: "private", prefix },
        target: { bucket: "public", prefix: publicPrefix },
        publicBaseUrl,
      }),
      async readPublic(id, format) {
        const object = await client
          .send(
            new GetObjectCommand({
              Bucket: "public",
              Key: `${publicPrefix}images/${id}.${FILE_EXTENSIONS[format]}`,
            }),
          )
          .catch((error: { $metadata?: { httpStatusCode?: number } }) => {
            if (error.$metadata?.httpStatusCode === 404) return null;
            throw error;
          });
        return object === null ? null : ((await object.Body?.transformToByteArray()) ?? null);
      },
    };
  },
});
