import { once } from "node:events";
import type { IncomingMessage, Server } from "node:http";
import { request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { createSharpCodec } from "@pixport/codec-sharp";
import {
  createMemoryKeyStore,
  generateApiKey,
  generateKeyId,
  hashApiKey,
  type KeyStore,
} from "@pixport/core";
import { createHttpBindingPipeline, type HttpBindingPipeline, waitUntil } from "@pixport/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type ExpressNode, solid, startExpressNode, upload } from "./harness.js";

// A full node refuses an image job before it looks up the key or reads the body, so the 503 does
// not wait for the disk or the thread pool: over a real socket, with the key store stalled and
// the refused request's body never sent, the 503 still arrives. Requests that arrive together
// hold their places while their keys are looked up, so one beyond them is refused, not queued.

let node: ExpressNode;
let server: Server;
let base: string;
let subject: HttpBindingPipeline;
let key: string;
const stall = { closed: false, waiting: [] as Array<() => void>, lookups: 0 };

function stalledKeyStore(inner: KeyStore): KeyStore {
  return {
    ...inner,
    async findByHash(hash) {
      stall.lookups += 1;
      if (stall.closed) await new Promise<void>((resolve) => stall.waiting.push(resolve));
      return inner.findByHash(hash);
    },
  };
}

beforeAll(async () => {
  const keys = createMemoryKeyStore();
  subject = createHttpBindingPipeline({
    codec: createSharpCodec(),
    pipelineOptions: { workQueue: { maxActive: 1, maxQueued: 1, maxWaitMs: 30_000 } },
    deps: { keys: stalledKeyStore(keys) },
  });
  key = generateApiKey("live");
  await keys.insert({
    id: generateKeyId(),
    hash: await hashApiKey(key),
    displayPrefix: key.slice(0, 9),
    kind: "live",
    accountId: "patient",
    createdAt: new Date().toISOString(),
  });
  node = await startExpressNode(subject.pipeline);
  ({ server, base } = node);
});

afterAll(async () => {
  await node.close();
});

const body = JSON.stringify({ width: 40 });

const resize = (id: string) => call(base, "POST", `/v1/images/${id}/resize`, { key, json: { width: 40 } });

/** Sends only the headers of a resize (its declared body never follows) and resolves the answer. */
function headersOnly(id: string) {
  const { port } = server.address() as AddressInfo;
  const outgoing = httpRequest({
    host: "127.0.0.1",
    port,
    method: "POST",
    path: `/v1/images/${id}/resize`,
    headers: {
      "x-api-key": key,
      "content-type": "application/json",
      "content-length": String(body.length),
    },
  });
  outgoing.on("error", () => undefined);
  outgoing.flushHeaders();
  const answered = once(outgoing, "response").then(async (args) => {
    const response = args[0] as IncomingMessage;
    let text = "";
    for await (const chunk of response) text += chunk;
    return {
      status: response.statusCode,
      headers: response.headers,
      body: JSON.parse(text) as Record<string, unknown>,
    };
  });
  return { answered, request: outgoing };
}

describe("a full node refuses before the key look-up and the body", () => {
  it("answers 503 OVERLOADED while the key store is stalled and the body is unsent", async () => {
    const { id } = await upload(base, key, await solid(120, 80, [51, 102, 204]));

    // Two resizes take the slot and the queue place while their keys are being looked up.
    stall.closed = true;
    const accepted = [resize(id), resize(id)];
    await waitUntil(() => stall.waiting.length === 2, "both resizes reach the key look-up");
    const lookups = stall.lookups;

    const refused = headersOnly(id);
    const outcome = await Promise.race([
      refused.answered,
      // A guard against a hang only (the old order waited for the stalled key look-up forever).
      new Promise<"no answer">((resolve) => setTimeout(() => resolve("no answer"), 10_000).unref()),
    ]);
    expect(outcome).not.toBe("no answer");
    const answer = outcome as Awaited<typeof refused.answered>;
    expect(answer.status).toBe(503);
    expect(Number(answer.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expect(answer.body).toMatchObject({
      type: "https://docs.img-processing.com/errors/internal-error",
      status: 503,
      code: "OVERLOADED",
    });
    expect(answer.body.message).toMatch(/capacity/);
    // Decided before the key was looked up (and no byte of its body was ever sent).
    expect(stall.lookups).toBe(lookups);
    refused.request.destroy();

    stall.closed = false;
    for (const resume of stall.waiting.splice(0)) resume();
    const answers = await Promise.all(accepted);
    expect(answers.map((response) => response.status)).toEqual([201, 201]);
    // The held places were given back: the gate is empty and takes the next job.
    expect(subject.pipeline.load()).toEqual({ active: 0, queued: 0 });
    expect((await resize(id)).status).toBe(201);
  });
});
