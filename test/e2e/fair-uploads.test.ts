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
