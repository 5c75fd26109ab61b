import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { type AddressInfo, connect, createServer } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { removeDir, tempDataDir, useServer } from "./harness.js";

const CLI = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../packages/server/dist/cli.js");

async function freePort(): Promise<number> {
  const probe = createServer();
  probe.listen(0, "127.0.0.1");
  await once(probe, "listening");
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** Sends raw bytes on a new connection and returns everything the server wrote before closing. */
async function raw(url: string, bytes: string): Promise<string> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  await once(socket, "connect");
  socket.write(bytes);
  let text = "";
  socket.setEncoding("utf8");
  socket.on("data", (chunk: string) => {
    text += chunk;
  });
  await Promise.race([once(socket, "close"), new Promise((resolve) => setTimeout(resolve, 5_000))]);
  socket.destroy();
  return text;
}

function parseRaw(text: string) {
  const [head = "", body = ""] = text.split("\r\n\r\n");
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]);
  return { status, head, json: JSON.parse(body) };
}

describe("start-up: every request gets an answer", () => {
  let dataDir: string;
  let child: ChildProcess | undefined;
  beforeAll(async () => {
    if (!existsSync(CLI))
      throw new Error(`${CLI} is missing: run \`pnpm build\` first (the test script does).`);
    dataDir = await tempDataDir();
  });
  afterAll(async () => {
    child?.kill("SIGKILL");
    await removeDir(dataDir);
  });

  it("answers every request accepted while it starts within a second (503 + Retry-After until ready)", async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    child = spawn(
      process.execPath,
      [CLI, "serve", "--port", String(port), "--host", "127.0.0.1", "--data-dir", dataDir],
      {
        env: { ...process.env, PIXPORT_LOG: "false" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let output = "";
    child.stdout!.on("data", (chunk) => {
      output += chunk;
    });
    const answers: { status: number; ms: number; retryAfter: string | null; body: any }[] = [];
    const hung: number[] = [];
    let refused = 0;
    const probes: Promise<void>[] = [];
    const deadline = Date.now() + 20_000;
    let readyAt: number | undefined;
    while (Date.now() < deadline && (readyAt === undefined || Date.now() < readyAt + 300)) {
      const started = Date.now();
      probes.push(
        fetch(`${url}/v1/images`, {
          headers: { "x-api-key": "live_unknown" },
          signal: AbortSignal.timeout(1_000),
        })
          .then(async (response) => {
            answers.push({
              status: response.status,
              ms: Date.now() - started,
              retryAfter: response.headers.get("retry-after"),
              body: await response.json(),
            });
          })
          .catch((error: Error) => {
            if (error.name === "TimeoutError" || error.name === "AbortError") hung.push(Date.now() - started);
            else refused += 1;
          }),
      );
      if (readyAt === undefined && output.includes("listening on")) readyAt = Date.now();
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await Promise.all(probes);
    expect(readyAt, output).toBeDefined();
    expect(hung).toEqual([]);
    expect(answers.length).toBeGreaterThan(0);
    for (const answer of answers) {
      expect(answer.ms).toBeLessThan(1_000);
      expect([401, 503]).toContain(answer.status);
      if (answer.status === 503) {
        expect(answer.retryAfter).toBe("1");
        expect(answer.body).toMatchObject({
          type: "https://docs.img-processing.com/errors/internal-error",
          status: 503,
          error: "Internal Error",
          code: "STARTING",
          message: "The server is starting; retry in a moment.",
        });
      } else {
        expect(answer.body).toMatchObject({ status: 401, error: "Unauthorized" });
      }
    }
    // Once the banner is out, the API answers normally.
    expect(answers.at(-1)?.status).toBe(401);
    expect(refused + answers.length).toBe(probes.length);
  });
});

describe("Node's own parse errors carry the contract's JSON body", () => {
  const handle = useServer();

  it("answers a malformed request line with a JSON 400", async () => {
    const answer = parseRaw(await raw(handle.url, "NOT A REQUEST\r\n\r\n"));
    expect(answer.status).toBe(400);
    expect(answer.json).toMatchObject({
      type: "https://docs.img-processing.com/errors/bad-request",
      error: "Bad Request",
      status: 400,
      code: "BAD_REQUEST",
    });
    expect(answer.json.message).toEqual(expect.any(String));
  });

  it("answers headers over Node's limit with a JSON 431", async () => {
    const big = `GET /v1/images HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(40_000)}\r\n\r\n`;
    const answer = parseRaw(await raw(handle.url, big));
    expect(answer.status).toBe(431);
    expect(answer.json).toMatchObject({ status: 431, code: "BAD_REQUEST" });
    expect(answer.head).toMatch(/content-type: application\/json/i);
  });
});

describe("shutdown: readiness turns false before draining", () => {
  const handle = useServer({ shutdownDelayMs: 600 });

  it("answers /readyz 503 (and /healthz 200) as soon as close() begins, then stops", async () => {
    expect((await fetch(`${handle.url}/readyz`)).status).toBe(200);
    const closing = handle.server.close();
    const ready = await fetch(`${handle.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toEqual({ status: "draining" });
    expect(ready.headers.get("connection")).toBe("close");
    expect((await fetch(`${handle.url}/healthz`)).status).toBe(200);
    await closing;
    await expect(fetch(`${handle.url}/healthz`)).rejects.toThrow();
  });
});
