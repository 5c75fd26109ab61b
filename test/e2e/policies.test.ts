import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { promisify } from "node:util";
import { createSharpCodec } from "@pixport/codec-sharp";
import { BLACK } from "@pixport/core";
import { quotaPeriod, testWatermarkLayer } from "@pixport/core/internal";
import { createRedisQuotaStore } from "@pixport/redis";
import type { PixportServer } from "@pixport/server";
import { createManualClock, startRedisServer, type TestRedisServer } from "@pixport/testing";
import { Redis } from "ioredis";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CLI,
  call,
  decode,
  newKey,
  type PrebuiltNode,
  type Raw,
  removeDir,
  solid,
  spawnPrebuiltServer,
  stopPrebuiltServer,
  tempDataDir,
  upload,
  uploadForm,
} from "./harness.js";

const run = promisify(execFile);

type Node = PrebuiltNode;
const serve = spawnPrebuiltServer;
const stop = stopPrebuiltServer;

describe("policies across two prebuilt-server processes sharing one Redis", () => {
  let redis: TestRedisServer;
  let dataDir: string;
  let nodes: Node[] = [];
  let environment: Record<string, string>;
  const cli = async (...args: string[]) =>
    (
      await run(process.execPath, [CLI, ...args, "--data-dir", dataDir], {
        env: { ...process.env, ...environment },
      })
    ).stdout.trim();

  beforeAll(async () => {
    if (!existsSync(CLI))
      throw new Error(`${CLI} is missing: run \`pnpm build\` first (the test script does).`);
    redis = await startRedisServer();
    dataDir = await tempDataDir();
    environment = {
      PIXPORT_REDIS_URL: redis.url,
      // The quota tests send 50 uploads of one account at once: lift the per-account upload slots
      // (fair uploads are tested in fair-uploads.test.ts) so every one reaches the quota check.
      PIXPORT_MAX_CONCURRENT_UPLOADS_PER_ACCOUNT: "64",
      PIXPORT_MAX_CONCURRENT_UPLOADS: "64",
    };
    nodes = await Promise.all([serve(dataDir, environment), serve(dataDir, environment)]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all(nodes.map(stop));
    await redis.stop();
    await removeDir(dataDir);
  });

  it("admits exactly 10 of 30 requests of one test key spread over both nodes, with the contract's 429", async () => {
    const key = await cli("keys", "create", "--kind", "test", "--account", "spread");
    const responses = await Promise.all(
      Array.from({ length: 30 }, (_, index) => call(nodes[index % 2]!.url, "GET", "/v1/images", { key })),
    );
    expect(responses.filter((response) => response.status === 200)).toHaveLength(10);
    const refused = responses.filter((response) => response.status === 429);
    expect(refused).toHaveLength(20);
    const sample = refused[0]!;
    expect(sample.json).toMatchObject({
      type: "https://docs.img-processing.com/errors/too-many-requests",
      error: "Too Many Requests",
      status: 429,
    });
    expect(Number(sample.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(Number(sample.headers.get("retry-after"))).toBeLessThanOrEqual(60);
    expect(sample.headers.get("x-ratelimit-limit")).toBe("10");
    expect(sample.headers.get("x-ratelimit-remaining")).toBe("0");
    const admitted = responses.find((response) => response.status === 200)!;
    expect(admitted.headers.get("x-ratelimit-limit")).toBe("10");
    expect(Number(admitted.headers.get("x-ratelimit-remaining"))).toBeLessThan(10);
  });

  it("admits exactly 100 of 130 requests of one live key over both nodes", async () => {
    const key = await cli("keys", "create", "--kind", "live", "--account", "busy");
    const responses = await Promise.all(
      Array.from({ length: 130 }, (_, index) =>
        call(nodes[index % 2]!.url, "GET", "/v1/images?take=1", { key }),
      ),
    );
    expect(responses.filter((response) => response.status === 200)).toHaveLength(100);
    expect(responses.filter((response) => response.status === 429)).toHaveLength(30);
  });

  it("grants exactly one of 50 concurrent uploads across both nodes at 24 of 25 trial images used", async () => {
    const key = await cli("keys", "create", "--kind", "live", "--account", "trial");
    const client = new Redis(redis.url);
    try {
      const quota = createRedisQuotaStore({ client });
      const period = quotaPeriod(new Date());
      for (let used = 0; used < 24; used++)
        await quota.reserve({ accountId: "trial", period, units: 1, limit: 25 });
      const png = await solid(8, 8, [200, 10, 10]);
      const responses = await Promise.all(
        Array.from({ length: 50 }, (_, index) =>
          call(nodes[index % 2]!.url, "POST", "/v1/images/upload", {
            key,
            form: uploadForm(`q${index}`, png),
          }),
        ),
      );
      expect(responses.filter((response) => response.status === 201)).toHaveLength(1);
      const refused = responses.filter((response) => response.status === 403);
      expect(refused).toHaveLength(49);
      expect(refused[0]!.json).toMatchObject({ error: "Forbidden", status: 403, code: "QUOTA_EXCEEDED" });
      expect(refused[0]!.json.message).toMatch(/quota/);
      expect(
        responses.find((response) => response.status === 201)!.headers.get("x-image-processing-usage"),
      ).toBe("1");
      expect(await quota.usage("trial", period)).toBe(25);
      // Upgrading from the CLI lifts the cap on both nodes at once.
      await cli("accounts", "upgrade", "--account", "trial");
      const after = await call(nodes[1]!.url, "POST", "/v1/images/upload", {
        key,
        form: uploadForm("after", png),
      });
      expect(after.status).toBe(201);
    } finally {
      client.disconnect();
    }
  });

  it("answers 503 with Retry-After while Redis is down, within a bounded time, and recovers by itself", async () => {
    const key = await cli("keys", "create", "--kind", "live", "--account", "outage");
    expect((await call(nodes[0]!.url, "GET", "/v1/images", { key })).status).toBe(200);
    await redis.stop();
    try {
      const started = performance.now();
      const during = await call(nodes[0]!.url, "GET", "/v1/images", { key });
      // Bounded: the adapters' 2 s command deadline plus slack, never a hang.
      expect(performance.now() - started).toBeLessThan(5_000);
      expect(during.status).toBe(503);
      expect(during.json).toMatchObject({
        status: 503,
        error: "Internal Error",
        code: "STORAGE_UNAVAILABLE",
      });
      expect(Number(during.headers.get("retry-after"))).toBeGreaterThan(0);
      // Readiness names the store that is down, within 2 s.
      const probeStarted = performance.now();
      const ready = await fetch(`${nodes[0]!.url}/readyz`);
      expect(performance.now() - probeStarted).toBeLessThan(2_000);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toEqual({ status: "unready", failed: ["keys"] });
    } finally {
      await redis.restart();
    }
    let readyAgain = 0;
    for (let attempt = 0; attempt < 50 && readyAgain !== 200; attempt++) {
      readyAgain = (await fetch(`${nodes[0]!.url}/readyz`)).status;
      if (readyAgain !== 200) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(readyAgain).toBe(200);
    // The key lived in the restarted (non-persistent) Redis: create it again, then both nodes serve.
    const fresh = await cli("keys", "create", "--kind", "live", "--account", "outage");
    let recovered = 0;
    for (let attempt = 0; attempt < 50 && recovered < 2; attempt++) {
      recovered = 0;
      for (const node of nodes)
        if ((await call(node.url, "GET", "/v1/images", { key: fresh })).status === 200) recovered++;
      if (recovered < 2) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(recovered).toBe(2);
  }, 30_000);
});

describe("test-key watermark and retention on the embedded deployment", () => {
  let server: PixportServer;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await tempDataDir();
    const { startPixportServer, resolveServerConfig } = await import("@pixport/server");
    server = await startPixportServer(
      resolveServerConfig({
        port: 0,
        host: "127.0.0.1",
        dataDir,
        log: false,
        retentionSweepIntervalMs: 0,
        policies: { testRequestsPerMinute: 1_000_000, liveRequestsPerMinute: 1_000_000 },
      }),
    );
  });

  afterAll(async () => {
    await server.close();
    await removeDir(dataDir);
  });

  /** Where the mark of an image of `width` x `height` is: its overlay drawn on a transparent canvas. */
  async function markMask(width: number, height: number) {
    const transparent = new Uint8Array(
      await sharp({ create: { width, height, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } } })
        .png()
        .toBuffer(),
    );
    return decode(
      (
        await createSharpCodec().transform({
          input: transparent,
          steps: [{ type: "overlay", layers: [testWatermarkLayer({ width, height })] }],
          output: { format: "png", quality: 100, flattenBackground: BLACK },
          limits: { maxInputPixels: 1e8 },
        })
      ).data,
    );
  }

  /** Asserts `marked` equals `plain` outside the mask and differs from it under the mark. */
  function expectDifferenceExactlyUnderMark(plain: Raw, marked: Raw, mask: Raw) {
    let marks = 0;
    let changedUnderMark = 0;
    for (let y = 0; y < mask.height; y++) {
      for (let x = 0; x < mask.width; x++) {
        const alpha = mask.data[(y * mask.width + x) * 4 + 3]!;
        const pixelOffset = y * mask.width + x;
        const difference = Math.max(
          ...[0, 1, 2].map((channel) =>
            Math.abs(
              plain.data[pixelOffset * plain.channels + channel]! -
                marked.data[pixelOffset * marked.channels + channel]!,
            ),
          ),
        );
        if (alpha === 0) {
          expect(difference, `pixel ${x},${y} is outside the mark`).toBeLessThanOrEqual(1);
        } else if (alpha >= 120) {
          // Solid parts of the mark (drawn at 50 % opacity, so alpha about 127) whose colour is far
          // from the image's grey (scaled-down letters mix white and black outline into grey).
          const markColor = mask.data[pixelOffset * 4]!;
          if (Math.abs(markColor - 128) < 60) continue;
          marks++;
          if (difference > 20) changedUnderMark++;
        }
      }
    }
    expect(marks).toBeGreaterThan(300);
    expect(changedUnderMark / marks).toBeGreaterThan(0.95);
  }

  it("marks a test-key upload exactly where the mark is; the live-key upload of the same file is unmarked", async () => {
    const testKey = await newKey(server, "test", "marks");
    const liveKey = await newKey(server, "live", "marks");
    const grey = await solid(240, 160, [128, 128, 128]);
    const live = await upload(server.url, liveKey, grey, "grey");
    const test = await upload(server.url, testKey, grey, "grey");
    const plain = await decode(
      (await call(server.url, "GET", `/v1/images/${live.id}/download`, { key: liveKey })).bytes,
    );
    const marked = await decode(
      (await call(server.url, "GET", `/v1/images/${test.id}/download`, { key: testKey })).bytes,
    );
    expect(plain.data.every((value, index) => index % plain.channels === 3 || value === 128)).toBe(true);
    expectDifferenceExactlyUnderMark(plain, marked, await markMask(240, 160));
  });

  it("marks every transform of a test key, whatever the request body says", async () => {
    const testKey = await newKey(server, "test", "marks2");
    const grey = await solid(240, 160, [128, 128, 128]);
    const source = await upload(server.url, testKey, grey, "grey");
    const original = (await call(server.url, "GET", `/v1/images/${source.id}/download`, { key: testKey }))
      .bytes;
    const body = {
      width: 200,
      height: 120,
      watermark: false,
      test_watermark: false,
      disable_watermark: true,
    };
    const resized = await call(server.url, "POST", `/v1/images/${source.id}/resize`, {
      key: testKey,
      json: body,
    });
    expect(resized.status).toBe(201);
    const served = await decode(
      (await call(server.url, "GET", `/v1/images/${resized.json.id}/download`, { key: testKey })).bytes,
    );
    // The same resize of the same (already marked) original, without a new mark.
    const expected = await decode(
      (
        await createSharpCodec().transform({
          input: original,
          steps: [
            { type: "resize", width: 200, height: 120, fit: "fill", position: "center", background: BLACK },
          ],
          output: { format: "png", quality: 100, flattenBackground: BLACK },
          limits: { maxInputPixels: 1e8 },
        })
      ).data,
    );
    expectDifferenceExactlyUnderMark(expected, served, await markMask(200, 120));
  });

  it("removes test images older than 90 days with their public copy, keeping live and newer ones", async () => {
    const retentionDir = await tempDataDir();
    const retentionClock = createManualClock(Date.UTC(2026, 0, 1, 12, 0, 0));
    const { startPixportServer, resolveServerConfig } = await import("@pixport/server");
    const retention = await startPixportServer(
      resolveServerConfig({
        port: 0,
        host: "127.0.0.1",
        dataDir: retentionDir,
        log: false,
        retentionSweepIntervalMs: 0,
      }),
      undefined,
      { clock: retentionClock },
    );
    try {
      const testKey = await newKey(retention, "test", "retention");
      const liveKey = await newKey(retention, "live", "retention");
      const png = await solid(10, 10, [1, 2, 3]);
      const old = await upload(retention.url, testKey, png, "old");
      const published = await call(retention.url, "POST", `/v1/images/${old.id}/publish`, { key: testKey });
      const liveOld = await upload(retention.url, liveKey, png, "live-old");
      retentionClock.advance(60 * 24 * 60 * 60 * 1000);
      const newer = await upload(retention.url, testKey, png, "newer");
      retentionClock.advance(30 * 24 * 60 * 60 * 1000 - 1);
      expect(await retention.pipeline.sweepExpiredTestImages()).toBe(0);
      retentionClock.advance(2);
      expect(await retention.pipeline.sweepExpiredTestImages()).toBe(1);
      expect((await call(retention.url, "GET", `/v1/images/${old.id}`, { key: testKey })).status).toBe(404);
      expect((await fetch(published.json.url)).status).toBe(404);
      expect((await call(retention.url, "GET", `/v1/images/${newer.id}`, { key: testKey })).status).toBe(200);
      expect((await call(retention.url, "GET", `/v1/images/${liveOld.id}`, { key: liveKey })).status).toBe(
        200,
      );
    } finally {
      await retention.close();
      await removeDir(retentionDir);
    }
  });
});
