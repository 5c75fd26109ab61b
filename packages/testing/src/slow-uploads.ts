import { request as httpRequest } from "node:http";

/** An upload's answer: its status and parsed JSON body; status 0 when it closed unanswered. */
export interface UploadAnswer {
  status: number;
  body: unknown;
  /** Time from the request to the end of the answer, ms. */
  ms: number;
}

/** How a {@link slowUpload} sends its body. */
export interface SlowUploadOptions {
  /** The server's base URL (`http://127.0.0.1:40123`). */
  url: string;
  key: string;
  /** The body size the request declares (`content-length`), bytes. */
  declaredBytes: number;
  /** Bytes sent at each tick after the multipart part's header. @default 1 */
  bytesPerTick?: number;
  /** Time between ticks, ms. */
  everyMs: number;
}

/** One slow upload: its answer (rejects when it closes unanswered), and how to stop sending. */
export interface SlowUpload {
  answered: Promise<UploadAnswer>;
  stop(): void;
}

const SLOW_BOUNDARY = "pixportSlowUpload";

/** Collects a response's body and resolves with the answer (JSON body, or undefined). */
function answerOf(
  response: import("node:http").IncomingMessage,
  started: number,
  resolve: (answer: UploadAnswer) => void,
): void {
  const chunks: Buffer[] = [];
  response.on("data", (chunk: Buffer) => chunks.push(chunk));
  response.on("end", () => {
    let body: unknown;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      body = undefined;
    }
    resolve({ status: response.statusCode ?? 0, body, ms: performance.now() - started });
  });
}

/**
 * A multipart upload (`POST /v1/images/upload`) that sends its headers and the start of its image
 * part, then `bytesPerTick` bytes every `everyMs` ms: the slow body of a client on a poor link, or
 * of an attacker holding an upload slot.
 */
export function slowUpload(options: SlowUploadOptions): SlowUpload {
  const started = performance.now();
  const request = httpRequest(`${options.url}/v1/images/upload`, {
    method: "POST",
    headers: {
      "x-api-key": options.key,
      "content-type": `multipart/form-data; boundary=${SLOW_BOUNDARY}`,
      "content-length": String(options.declaredBytes),
    },
  });
  request.on("error", () => undefined);
  request.write(
    `--${SLOW_BOUNDARY}\r\nContent-Disposition: form-data; name="image"; filename="a.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`,
  );
  const tick = Buffer.alloc(options.bytesPerTick ?? 1, 120);
  const timer = setInterval(() => {
    if (!request.destroyed) request.write(tick);
  }, options.everyMs);
  const answered = new Promise<UploadAnswer>((resolve, reject) => {
    request.on("response", (response) => answerOf(response, started, resolve));
    request.on("close", () => reject(new Error("closed without an answer")));
  });
  answered.catch(() => undefined);
  void answered.finally(() => clearInterval(timer)).catch(() => undefined);
  return {
    answered,
    stop() {
      clearInterval(timer);
      request.destroy();
    },
  };
}

/**
 * Keeps one {@link slowUpload} open, opening the next as soon as one is answered (after
 * `pauseAfter503Ms` when refused with 503), and hands each answer (`null`: closed unanswered) to
 * `onAnswer`. Resolves `stop`'s promise once the last upload is closed.
 */
export function keepUploadingSlowly(
  options: SlowUploadOptions & { pauseAfter503Ms: number; onAnswer(answer: UploadAnswer | null): void },
): () => Promise<void> {
  let stopped = false;
  let current: SlowUpload | undefined;
  const loop = async () => {
    while (!stopped) {
      current = slowUpload(options);
      const answer = await current.answered.catch(() => null);
      current.stop();
      if (!stopped) options.onAnswer(answer);
      if (answer?.status === 503)
        await new Promise((resolve) => setTimeout(resolve, options.pauseAfter503Ms));
    }
  };
  const running = loop();
  return async () => {
    stopped = true;
    current?.stop();
    await running;
  };
}

/**
 * One whole multipart upload of `image` (named `name`) over its own connection: its answer, status
 * 0 when the connection closed unanswered (node's client may see a 503 sent before the body was
 * read as a reset).
 */
export function uploadOnce(
  url: string,
  key: string,
  image: Uint8Array,
  { name = "good", mimeType = "image/png" }: { name?: string; mimeType?: string } = {},
): Promise<UploadAnswer> {
  const boundary = "pixportWholeUpload";
  const body = Buffer.concat([
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\n${name}\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="upload"\r\nContent-Type: ${mimeType}\r\n\r\n`,
    ),
    image,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  const started = performance.now();
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
    request.on("response", (response) => answerOf(response, started, resolve));
    request.on("error", () => resolve({ status: 0, body: undefined, ms: performance.now() - started }));
    request.end(body);
  });
}
