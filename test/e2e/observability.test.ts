import { execFile } from "node:child_process";
import { readdir, rm } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { waitUntil } from "@pixport/testing";
// @ts-expect-error the package ships no types; it returns [{ name, type, metrics: [{ value, labels }] }]
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CLI,
  call,
  halves,
  type PrebuiltNode,
  removeDir,
  spawnPrebuiltServer,
  stopPrebuiltServer,
  tempDataDir,
  uploadForm,
} from "./harness.js";

const run = promisify(execFile);

interface Family {
  name: string;
  metrics: { value?: string; labels?: Record<string, string>; buckets?: Record<string, string> }[];
}

describe("access logs, request ids and /metrics of the prebuilt server", () => {
  let dataDir: string;
  let node: PrebuiltNode;
  let key: string;
  const cli = async (...args: string[]) =>
    (await run(process.execPath, [CLI, ...args, "--data-dir", dataDir])).stdout.trim();
  beforeAll(async () => {
    dataDir = await tempDataDir();
    // No blob cache: the 500 below comes from bytes removed on disk.
    node = await spawnPrebuiltServer(dataDir, {
      PIXPORT_LOG: "true",
      PIXPORT_LOG_LEVEL: "info",
      PIXPORT_BLOB_CACHE_BYTES: "0",
    });
    await cli("accounts", "upgrade", "--account", "observed");
    key = await cli("keys", "create", "--kind", "live", "--account", "observed");
  });
  afterAll(async () => {
    await stopPrebuiltServer(node);
    await removeDir(dataDir);
  });

  const accessLines = () =>
    node
      .output()
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.msg === "request");

  async function scrape(): Promise<Family[]> {
    const response = await fetch(`${node.url}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/plain");
    return parsePrometheusTextFormat(await response.text()) as Family[];
  }
  const requestsOf = (families: Family[], route: string, status: string) =>
    Number(
      families
        .find((family) => family.name === "pixport_http_requests_total")
        ?.metrics.find((metric) => metric.labels?.route === route && metric.labels?.status === status)
        ?.value ?? 0,
    );

  it("logs one line per request with its fields and never the key; the request id round-trips", async () => {
    const before = await scrape();
    const png = await halves(16, 8, [255, 0, 0], [0, 0, 255]);
    const created = await call(node.url, "POST", "/v1/images/upload", {
      key,
      form: uploadForm("seen", png),
      headers: { "x-request-id": "trace-123.abc" },
    });
    expect(created.status).toBe(201);
    expect(created.headers.get("x-request-id")).toBe("trace-123.abc");
    const invalid = await call(node.url, "POST", `/v1/images/${created.json.id}/resize`, {
      key,
      json: { width: 0 },
    });
    expect(invalid.status).toBe(422);
    const generated = invalid.headers.get("x-request-id");
    expect(generated).toMatch(/^[0-9a-f-]{36}$/);
    // A 500: the stored bytes of an image vanish behind the server's back.
    const files = await readdir(path.join(dataDir, "blobs"), { recursive: true });
    const blob = files.find((file) => file.includes(created.json.id))!;
    await rm(path.join(dataDir, "blobs", blob));
    const broken = await call(node.url, "GET", `/v1/images/${created.json.id}/download`, { key });
    expect(broken.status).toBe(500);
    // A 429: the key's limit lowered to what it already used.
    const listed = await cli("keys", "list");
    const keyId = listed
      .split("\n")
      .find((line) => line.includes("observed"))!
      .split("\t")[0]!;
    await cli("keys", "limit", "--id", keyId, "--per-minute", "3");
    const limited = await call(node.url, "GET", "/v1/images", { key });
    expect(limited.status).toBe(429);

    await waitUntil(() => accessLines().length >= 4, "four access lines");
    const lines = accessLines();
    const byStatus = (status: number) => lines.find((line) => line.status === status)!;
    expect(byStatus(201)).toMatchObject({
      level: 30,
      requestId: "trace-123.abc",
      method: "POST",
      route: "/v1/images/upload",
      accountId: "observed",
      keyId,
    });
    expect(byStatus(201).durationMs).toEqual(expect.any(Number));
    expect(byStatus(201).bytes).toBeGreaterThan(100);
    expect(byStatus(422)).toMatchObject({ level: 40, requestId: generated, errorCode: "VALIDATION_FAILED" });
    expect(byStatus(422).route).toBe("/v1/images/{image_id}/resize");
    expect(byStatus(500)).toMatchObject({
      level: 50,
      route: "/v1/images/{image_id}/download",
      errorCode: "INTERNAL",
    });
    expect(byStatus(429)).toMatchObject({ level: 40, errorCode: "RATE_LIMITED" });
    // The error line of the 500 carries the request id and the cause; nothing anywhere has the key.
    expect(node.output()).toMatch(/"msg":"request failed"/);
    expect(node.output()).not.toContain(key);
    expect(node.output()).not.toContain(key.slice(5));

    // The counters moved by exactly these requests.
    const after = await scrape();
    expect(
      requestsOf(after, "/v1/images/upload", "201") - requestsOf(before, "/v1/images/upload", "201"),
    ).toBe(1);
    expect(
      requestsOf(after, "/v1/images/{image_id}/resize", "422") -
        requestsOf(before, "/v1/images/{image_id}/resize", "422"),
    ).toBe(1);
    const refusals = after.find((family) => family.name === "pixport_refusals_total");
    expect(refusals?.metrics.find((metric) => metric.labels?.code === "RATE_LIMITED")?.value).toBe("1");
    // The parser drops histogram labels, so the codec histogram's count is read from the text.
    const text = await (await fetch(`${node.url}/metrics`)).text();
    const encodes = /^pixport_codec_job_seconds_count\{operation="encode",outcome="ok"\} (\d+)$/m.exec(
      text,
    )?.[1];
    expect(Number(encodes)).toBeGreaterThanOrEqual(1);
    const names = after.map((family) => family.name);
    expect(names).toEqual(
      expect.arrayContaining([
        "pixport_http_request_duration_seconds",
        "pixport_work_gate_jobs",
        "pixport_memory_budget_bytes",
        "pixport_process_resident_memory_bytes",
      ]),
    );
  }, 60_000);

  it("counts model calls by model and outcome (the embedded OCR model)", async () => {
    // Back to the default limit (the first test lowered it); the server's first-start keys are
    // listed too, so the key is found by its account.
    const keyId = (await cli("keys", "list"))
      .split("\n")
      .find((line) => line.includes("\tobserved\t"))!
      .split("\t")[0]!;
    await cli("keys", "limit", "--id", keyId, "--per-minute", "default");
    const page = await halves(200, 80, [255, 255, 255], [250, 250, 250]);
    const image = await call(node.url, "POST", "/v1/images/upload", { key, form: uploadForm("page", page) });
    expect(image.status, `${JSON.stringify(image.json)} ${image.headers.get("x-ratelimit-limit")}`).toBe(201);
    const extracted = await call(node.url, "POST", `/v1/images/${image.json.id}/extract-formatted-text`, {
      key,
      json: { format: "plain" },
    });
    expect(extracted.status).toBe(201);
    const families = await scrape();
    const calls = families.find((family) => family.name === "pixport_model_calls_total");
    expect(calls?.metrics.find((metric) => metric.labels?.model === "tesseract")).toMatchObject({
      labels: { model: "tesseract", outcome: "ok" },
      value: "1",
    });
    // The call went through the model circuit breaker, whose circuit is closed.
    const circuits = families.find((family) => family.name === "pixport_model_circuit_state");
    const tesseract = circuits?.metrics.filter((metric) => metric.labels?.model?.endsWith(":tesseract"));
    expect(tesseract?.find((metric) => metric.labels?.state === "closed")?.value).toBe("1");
    expect(tesseract?.find((metric) => metric.labels?.state === "open")?.value).toBe("0");
  }, 60_000);

  it("counts delivered variants by cache result", async () => {
    const image = await call(node.url, "POST", "/v1/images/upload", {
      key,
      form: uploadForm("variant", await halves(60, 30, [255, 0, 0], [0, 0, 255])),
    });
    const signed = await call(node.url, "POST", `/v1/images/${image.json.id}/signed-url`, {
      key,
      json: { modifiers: "w_20", format: "png" },
    });
    expect(signed.status, JSON.stringify(signed.json)).toBe(200);
    const variantsOf = async (result: string) =>
      Number(
        (await scrape())
          .find((family) => family.name === "pixport_delivery_variants_total")
          ?.metrics.find((metric) => metric.labels?.result === result)?.value ?? 0,
      );
    const [hits, misses] = [await variantsOf("hit"), await variantsOf("miss")];
    expect((await fetch(signed.json.url)).headers.get("x-cache")).toBe("MISS");
    expect((await fetch(signed.json.url)).headers.get("x-cache")).toBe("HIT");
    expect((await fetch(signed.json.url)).headers.get("x-cache")).toBe("HIT");
    expect(await variantsOf("miss")).toBe(misses + 1);
    expect(await variantsOf("hit")).toBe(hits + 2);
  }, 60_000);

  it("shows the codec's decoded-source cache: a stored image transformed twice is kept, within the default bound", async () => {
    const sourceCache = async () => {
      const family = (await scrape()).find((candidate) => candidate.name === "pixport_source_cache_bytes");
      const value = (kind: string) =>
        Number(family?.metrics.find((metric) => metric.labels?.kind === kind)?.value ?? Number.NaN);
      return { held: value("held"), bound: value("bound") };
    };
    const before = await sourceCache();
    expect(before.bound).toBe(64 * 1024 * 1024);
    const image = await call(node.url, "POST", "/v1/images/upload", {
      key,
      form: uploadForm("kept", await halves(300, 200, [255, 0, 0], [0, 0, 255])),
    });
    expect(image.status).toBe(201);
    // The first transform decodes as usual; the second keeps the decoded 300 x 200 RGB source
    // (whole: both are reductions under 2x).
    for (const width of [200, 220]) {
      const resized = await call(node.url, "POST", `/v1/images/${image.json.id}/resize`, {
        key,
        json: { width },
      });
      expect(resized.status, JSON.stringify(resized.json)).toBe(201);
    }
    expect((await sourceCache()).held - before.held).toBe(300 * 200 * 3);
  }, 60_000);
});
