import { once } from "node:events";
import { request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { createSharpCodec } from "@pixport/codec-sharp";
import type { ImageCodec, VisionModel } from "@pixport/core";
import { createHttpHandler } from "@pixport/http";
import { createExpressRouter } from "@pixport/http-express";
import { createHttpBindingPipeline, type HttpBindingPipeline, waitUntil } from "@pixport/testing";
import express from "express";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ExpressNode, startExpressNode } from "./harness.js";

// Back-pressure over a real socket: a node with one job slot and one queue place refuses the third
// concurrent image job at once with 503 OVERLOADED and Retry-After, bills nothing for it, and runs
// the accepted ones to completion. A codec that waits on a latch makes the jobs slow on demand.

let node: ExpressNode;
let base: string;
let subject: HttpBindingPipeline;
let key: string;
const latch = { closed: false, waiting: [] as Array<() => void>, calls: 0 };

function latchedCodec(inner: ImageCodec): ImageCodec {
  return {
    ...inner,
    name: inner.name,
    capabilities: inner.capabilities,
    probe: (input) => inner.probe(input),
    async transform(request) {
      latch.calls += 1;
      if (latch.closed) await new Promise<void>((resolve) => latch.waiting.push(resolve));
      return inner.transform(request);
    },
  };
}

beforeAll(async () => {
  subject = createHttpBindingPipeline({
    codec: latchedCodec(createSharpCodec()),
    pipelineOptions: { workQueue: { maxActive: 1, maxQueued: 1, maxWaitMs: 30_000 } },
  });
  key = await subject.createKey("live", "busy");
  node = await startExpressNode(subject.pipeline);
  base = node.base;
});

afterAll(async () => {
  await node.close();
});

const resize = (id: string) =>
  fetch(`${base}/v1/images/${id}/resize`, {
    method: "POST",
    headers: { "x-api-key": key, "content-type": "application/json" },
    body: JSON.stringify({ width: 40 }),
  });

const rateRemaining = (response: Response) => response.headers.get("x-ratelimit-remaining");

describe("back-pressure (workQueue) over HTTP", () => {
  it("answers 503 OVERLOADED with Retry-After beyond the slots and the queue, and bills nothing for it", async () => {
    const png = await sharp({ create: { width: 120, height: 80, channels: 3, background: "#3366cc" } })
      .png()
      .toBuffer();
    const form = new FormData();
    form.append("image", new Blob([new Uint8Array(png)]), "tile.png");
    form.append("name", "tile");
    const uploaded = await fetch(`${base}/v1/images`, {
      method: "POST",
      headers: { "x-api-key": key },
      body: form,
    });
    expect(uploaded.status).toBe(201);
    const { id } = (await uploaded.json()) as { id: string };
    expect(uploaded.headers.get("x-image-processing-usage")).toBe("1");

    latch.closed = true;
    const first = resize(id);
    await waitUntil(() => latch.waiting.length === 1, "the first resize reaches the codec");
    const second = resize(id);
    await waitUntil(() => subject.pipeline.load()?.queued === 1, "the second resize waits for the slot");
    expect(subject.pipeline.load()).toEqual({ active: 1, queued: 1 });

    const remainingBefore = Number(
      rateRemaining(await fetch(`${base}/v1/images`, { headers: { "x-api-key": key } })),
    );
    const refused = await resize(id);
    expect(refused.status).toBe(503);
    // Refused before the rate limit counted it: the next request sees one fewer (its own), not two.
    const after = await fetch(`${base}/v1/images`, { headers: { "x-api-key": key } });
    expect(Number(rateRemaining(after))).toBe(remainingBefore - 1);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    const body = (await refused.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ status: 503, code: "OVERLOADED", error: "Internal Error" });
    expect(body.message).toMatch(/capacity/);
    expect(refused.headers.get("x-image-processing-usage")).toBe("0");
    // The refused request never reached the codec.
    expect(latch.calls).toBe(2);

    latch.closed = false;
    for (const release of latch.waiting.splice(0)) release();
    const [a, b] = await Promise.all([first, second]);
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(subject.pipeline.load()).toEqual({ active: 0, queued: 0 });
    // The account's month: the upload and the two accepted resizes; the refused one reserved nothing.
    expect((await subject.pipeline.usage("busy")).images).toBe(3);
  });
});

describe("model-backed calls and the work gate", () => {
  it("do not hold job slots while they wait on a provider", async () => {
    const answers: Array<(text: string) => void> = [];
    const slowVision: VisionModel = {
      models: ["uform-gen"],
      defaultModel: "uform-gen",
      describe: () => new Promise<string>((resolve) => answers.push(resolve)),
    };
    const gated = createHttpBindingPipeline({
      codec: createSharpCodec(),
      pipelineOptions: { workQueue: { maxActive: 1, maxQueued: 0, maxWaitMs: 30_000 } },
      deps: { models: { vision: slowVision } },
    });
    const liveKey = await gated.createKey("live", "patient");
    const app = express();
    app.use(createExpressRouter(createHttpHandler(gated.pipeline)));
    const local = app.listen(0, "127.0.0.1");
    await once(local, "listening");
    const url = `http://127.0.0.1:${(local.address() as AddressInfo).port}`;
    try {
      const png = await sharp({ create: { width: 60, height: 40, channels: 3, background: "#884422" } })
        .png()
        .toBuffer();
      const form = new FormData();
      form.append("image", new Blob([new Uint8Array(png)]), "p.png");
      form.append("name", "p");
      const uploaded = await fetch(`${url}/v1/images`, {
        method: "POST",
        headers: { "x-api-key": liveKey },
        body: form,
      });
      const { id } = (await uploaded.json()) as { id: string };
      const ask = () =>
        fetch(`${url}/v1/images/${id}/visualize`, {
          method: "POST",
          headers: { "x-api-key": liveKey, "content-type": "application/json" },
          body: JSON.stringify({ prompt: "What colour?" }),
        });
      const questions = [ask(), ask()];
      await waitUntil(() => answers.length === 2, "both calls reach the provider");
      // Two calls wait on the provider, yet the single job slot is free for a transform.
      expect(gated.pipeline.load()).toEqual({ active: 0, queued: 0 });
      const resized = await fetch(`${url}/v1/images/${id}/resize`, {
        method: "POST",
        headers: { "x-api-key": liveKey, "content-type": "application/json" },
        body: JSON.stringify({ width: 30 }),
      });
      expect(resized.status).toBe(201);
      for (const answer of answers) answer("Brown.");
      const replies = await Promise.all(questions);
      expect(replies.map((reply) => reply.status)).toEqual([201, 201]);
    } finally {
      local.closeAllConnections();
      local.close();
      await once(local, "close");
    }
  });
});

describe("uploads in progress (maxConcurrentUploads)", () => {
  it("refuses an upload unread with 503 while the allowed ones are still being received", async () => {
    const uploads = createHttpBindingPipeline({ codec: createSharpCodec() });
    const uploadKey = await uploads.createKey("live", "uploader");
    const app = express();
    app.use(createExpressRouter(createHttpHandler(uploads.pipeline, { maxConcurrentUploads: 1 })));
    const local = app.listen(0, "127.0.0.1");
    await once(local, "listening");
    const { port } = local.address() as AddressInfo;
    try {
      const png = await sharp({ create: { width: 16, height: 16, channels: 3, background: "#00aa55" } })
        .png()
        .toBuffer();
      const boundary = "pixport-slow-upload";
      const head = Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\nslow\r\n` +
          `--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="s.png"\r\n` +
          "Content-Type: image/png\r\n\r\n",
      );
      const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
      // A client that sends half of its upload, then stalls.
      const slow = httpRequest({
        host: "127.0.0.1",
        port,
        method: "POST",
        path: "/v1/images",
        headers: {
          "x-api-key": uploadKey,
          "content-type": `multipart/form-data; boundary=${boundary}`,
          "content-length": String(head.length + png.length + tail.length),
        },
      });
      const slowAnswer = new Promise<number>((resolve, reject) => {
        slow.once("response", (response) => {
          response.resume();
          resolve(response.statusCode ?? 0);
        });
        slow.once("error", reject);
      });
      slow.write(head);
      slow.write(png.subarray(0, 8));
      const upload = async () => {
        const form = new FormData();
        form.append("name", "quick");
        form.append("image", new Blob([new Uint8Array(png)]), "q.png");
        const response = await fetch(`http://127.0.0.1:${port}/v1/images`, {
          method: "POST",
          headers: { "x-api-key": uploadKey },
          body: form,
        });
        return {
          status: response.status,
          retryAfter: response.headers.get("retry-after"),
          body: await response.json(),
        };
      };
      // Until the stalled upload holds the only place, a quick one may still get through.
      let refused: Awaited<ReturnType<typeof upload>> | undefined;
      for (let attempt = 0; attempt < 50 && refused === undefined; attempt += 1) {
        const answer = await upload();
        if (answer.status === 503) refused = answer;
        else expect(answer.status).toBe(201);
      }
      expect(refused?.body).toMatchObject({ status: 503, code: "OVERLOADED" });
      expect(refused?.retryAfter).toBe("1");
      slow.end(Buffer.concat([png.subarray(8), tail]));
      expect(await slowAnswer).toBe(201);
      expect((await upload()).status).toBe(201);
    } finally {
      local.closeAllConnections();
      local.close();
      await once(local, "close");
    }
  });
});
