import { type ClientRequest, request as httpRequest } from "node:http";
import { describe, expect, it } from "vitest";
import { call, halves, newKey, uploadForm, useServer } from "./harness.js";

interface Trickle {
  request: ClientRequest;
  answered: Promise<{ status: number; ms: number; body: any }>;
  stop(): void;
}

/** An upload that sends its headers and the start of its body, then one byte every 300 ms. */
function trickle(url: string, key: string): Trickle {
  const boundary = "pixportTrickle";
  const started = Date.now();
  const request = httpRequest(`${url}/v1/images/upload`, {
    method: "POST",
    headers: {
      "x-api-key": key,
      "content-type": `multipart/form-data; boundary=${boundary}`,
      "content-length": "100000",
    },
  });
  request.on("error", () => undefined);
  request.write(
    `--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n`,
  );
  const timer = setInterval(() => {
    if (!request.destroyed) request.write("x");
  }, 300);
  const answered = new Promise<{ status: number; ms: number; body: any }>((resolve, reject) => {
    request.on("response", (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () => {
        clearInterval(timer);
        resolve({
          status: response.statusCode ?? 0,
          ms: Date.now() - started,
          body: JSON.parse(Buffer.concat(chunks).toString("utf8") || "null"),
        });
      });
    });
    request.on("close", () => {
      clearInterval(timer);
      reject(new Error("closed without an answer"));
    });
  });
  answered.catch(() => undefined);
  return {
    request,
    answered,
    stop() {
      clearInterval(timer);
      request.destroy();
    },
  };
}

describe("fair uploads: trickling bodies cannot hold every slot", () => {
  const handle = useServer({ uploadGraceMs: 1_500 });

  it("keeps 32 trickling uploads of one key to its account's slots, serves another account, then cuts the trickles off", async () => {
    const greedy = await newKey(handle.server, "live", "greedy");
    const other = await newKey(handle.server, "live", "other");
    const trickles = Array.from({ length: 32 }, () => trickle(handle.url, greedy));
    try {
      // Every upload beyond the account's 8 slots is refused at once, unread.
      const settled = await Promise.all(
        trickles.map((item) =>
          Promise.race([
            item.answered,
            new Promise((resolve) => setTimeout(() => resolve("holding"), 1_000)),
          ]),
        ),
      );
      const refused = settled.filter((entry) => entry !== "holding") as {
        status: number;
        ms: number;
        body: any;
      }[];
      expect(settled.filter((entry) => entry === "holding")).toHaveLength(8);
      expect(refused).toHaveLength(24);
      for (const answer of refused) {
        expect(answer.status).toBe(503);
        expect(answer.body).toMatchObject({ code: "OVERLOADED", status: 503 });
        expect(answer.ms).toBeLessThan(1_000);
      }
      // Another tenant uploads while the trickles hold their slots.
      const png = await halves(16, 8, [255, 0, 0], [0, 0, 255]);
      for (let index = 0; index < 3; index++) {
        const uploaded = await call(handle.url, "POST", "/v1/images/upload", {
          key: other,
          form: uploadForm("o", png),
        });
        expect(uploaded.status).toBe(201);
      }
      // After the grace period the trickles are far below the minimum rate: 408 and the slots free.
      const cut = await Promise.all(trickles.map((item) => item.answered.catch((error: Error) => error)));
      const timedOut = cut.filter((entry) => !(entry instanceof Error) && entry.status === 408) as {
        ms: number;
        body: any;
      }[];
      expect(timedOut).toHaveLength(8);
      for (const answer of timedOut) {
        expect(answer.body).toMatchObject({ status: 408, error: "Request Timeout", code: "REQUEST_TIMEOUT" });
        expect(answer.body.message).toMatch(/too slowly/);
        expect(answer.ms).toBeLessThan(5_000);
      }
      const again = await call(handle.url, "POST", "/v1/images/upload", {
        key: greedy,
        form: uploadForm("g", png),
      });
      expect(again.status).toBe(201);
    } finally {
      for (const item of trickles) item.stop();
    }
  }, 30_000);
});

/** Keeps one trickling upload open, reopening it as soon as it is answered; records the answers. */
function relentless(url: string, key: string, answers: { status: number; message: string }[]) {
  let stopped = false;
  let current: Trickle | undefined;
  const loop = async () => {
    while (!stopped) {
      current = trickle(url, key);
      const answer = await current.answered.catch(() => undefined);
      if (answer !== undefined) answers.push({ status: answer.status, message: answer.body?.message ?? "" });
      if (answer?.status === 503) await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  const running = loop();
  return async () => {
    stopped = true;
    current?.stop();
    await running;
  };
}

/** One upload over its own connection: its status, or 0 when the connection closed unanswered. */
function uploadOnce(url: string, key: string, png: Uint8Array): Promise<{ status: number; body: unknown }> {
  const boundary = "pixportWellBehaved";
  const body = Buffer.concat([
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\ngood\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="g.png"\r\nContent-Type: image/png\r\n\r\n`,
    ),
    png,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return new Promise((resolve) => {
    const request = httpRequest(`${url}/v1/images/upload`, {
      method: "POST",
      agent: false,
      headers: {
        "x-api-key": key,
        "content-type": `multipart/form-data; boundary=${boundary}`,
        "content-length": String(body.byteLength),
      },
    });
    request.on("response", (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () =>
        resolve({
          status: response.statusCode ?? 0,
          body: JSON.parse(Buffer.concat(chunks).toString("utf8")),
        }),
      );
    });
    request.on("error", () => resolve({ status: 0, body: undefined }));
    request.end(body);
  });
}

describe("fair uploads: many accounts trickling and reconnecting cannot keep another tenant out", () => {
  // Few slots, all of them taken by four trial accounts (two each), and a grace period longer than
  // the test, so only the fairness rule (fairUploadAfterMs at its default) can free a slot.
  const handle = useServer({
    maxConcurrentUploads: 8,
    maxConcurrentUploadsPerAccount: 2,
    uploadGraceMs: 120_000,
  });

  it("gives a well-behaved upload of another tenant a slot taken from the slowest body, again and again", async () => {
    const trialKeys = await Promise.all(
      [0, 1, 2, 3].map((index) => newKey(handle.server, "live", `trial-${index}`, { trial: true })),
    );
    const good = await newKey(handle.server, "live", "well-behaved");
    const answers: { status: number; message: string }[] = [];
    const stops = trialKeys.flatMap((key) => [0, 1].map(() => relentless(handle.url, key, answers)));
    try {
      // The trickles hold every slot; a ninth trickle of a full account is refused at once.
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      const png = await halves(16, 8, [255, 0, 0], [0, 0, 255]);
      for (let round = 0; round < 3; round++) {
        const started = Date.now();
        const uploaded = await uploadOnce(handle.url, good, png);
        expect(uploaded.status).toBe(201);
        expect(uploaded.body).toMatchObject({ format: "png", width: 16, height: 8 });
        // Generous: the rule frees a slot after about 2 s; the bound only catches a starved tenant.
        expect(Date.now() - started).toBeLessThan(15_000);
      }
      // The slots came from trickles, cut with the contract's 408 saying why; none got a 5xx else.
      const cut = answers.filter((answer) => answer.status === 408);
      expect(cut.length).toBeGreaterThanOrEqual(3);
      for (const answer of cut) expect(answer.message).toMatch(/too slowly while other uploads waited/);
      expect(answers.filter((answer) => answer.status !== 408 && answer.status !== 503)).toEqual([]);
    } finally {
      await Promise.all(stops.map((stop) => stop()));
    }
  }, 60_000);
});
