import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One request the fake provider received. */
export interface RecordedOpenAiRequest {
  method: string;
  /** Path without the `/v1` base, e.g. `/chat/completions`. */
  path: string;
  headers: IncomingMessage["headers"];
  /** The parsed JSON body (`undefined` when it did not parse). */
  body: any;
  /** Set when the client (pixport) closed the connection before an answer was sent. */
  abandoned?: boolean;
}

/** A scripted answer. */
export type OpenAiReply =
  | { status?: number; json: unknown; headers?: Record<string, string> }
  | { status?: number; raw: string; headers?: Record<string, string> }
  /** Accepts the request and never answers (until the server closes). */
  | { hang: true }
  /** Sends the headers, then never finishes the body. */
  | { hangBody: true }
  /** Closes the connection without an answer. */
  | { drop: true };

export type OpenAiHandler = (request: RecordedOpenAiRequest) => OpenAiReply | Promise<OpenAiReply>;

/** A loopback OpenAI-compatible server for tests (real sockets). */
export interface OpenAiCompatibleServer {
  /** Base URL including `/v1`, for the client's `baseURL`. */
  baseUrl: string;
  /** Every request received, in order. */
  requests: RecordedOpenAiRequest[];
  /** Replaces the handler (default: {@link defaultOpenAiReply}). */
  setHandler(handler: OpenAiHandler): void;
  /** Queues one-shot replies, used before the handler. */
  enqueue(...replies: OpenAiReply[]): void;
  /** Forgets recorded requests and queued replies; restores the default handler. */
  reset(): void;
  close(): Promise<void>;
}

/** A chat completion answering `content`. */
export function chatCompletion(content: string | null, finishReason = "stop", extra: object = {}): unknown {
  return {
    id: "chatcmpl-test",
    object: "chat.completion",
    created: 1_700_000_000,
    model: "test-model",
    choices: [{ index: 0, message: { role: "assistant", content, ...extra }, finish_reason: finishReason }],
  };
}

/** An images answer carrying `bytes` as `b64_json`. */
export function imagesResponse(bytes: Uint8Array): unknown {
  return { created: 1_700_000_000, data: [{ b64_json: Buffer.from(bytes).toString("base64") }] };
}

/** Default: a chat answer `"a test answer"`; images answer 500 (tests script them). */
export function defaultOpenAiReply(request: RecordedOpenAiRequest): OpenAiReply {
  if (request.path === "/chat/completions") return { json: chatCompletion("a test answer") };
  return { status: 500, json: { error: { message: "no scripted image" } } };
}

async function readJson(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    return undefined;
  }
}

/**
 * Starts an OpenAI-compatible HTTP server on 127.0.0.1 with scripted answers for
 * `POST /v1/chat/completions` and `POST /v1/images/generations` (any path is recorded).
 */
export async function startOpenAiCompatibleServer(): Promise<OpenAiCompatibleServer> {
  const requests: RecordedOpenAiRequest[] = [];
  const queue: OpenAiReply[] = [];
  let handler: OpenAiHandler = defaultOpenAiReply;
  const hanging = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    void (async () => {
      const recorded: RecordedOpenAiRequest = {
        method: req.method ?? "GET",
        path: (req.url ?? "/").replace(/^\/v1/, "").split("?")[0] ?? "/",
        headers: req.headers,
        body: await readJson(req),
      };
      requests.push(recorded);
      res.once("close", () => {
        if (!res.writableFinished) recorded.abandoned = true;
      });
      const reply = queue.shift() ?? (await handler(recorded));
      if ("hang" in reply) {
        hanging.add(res);
        return;
      }
      if ("drop" in reply) {
        res.destroy();
        return;
      }
      if ("hangBody" in reply) {
        res.writeHead(200, { "content-type": "application/json" });
        res.write('{"id":"chatcmpl-test",');
        hanging.add(res);
        return;
      }
      const status = reply.status ?? 200;
      const text = "raw" in reply ? reply.raw : JSON.stringify(reply.json);
      res.writeHead(status, { "content-type": "application/json", ...reply.headers });
      res.end(text);
    })().catch((error: unknown) => {
      res.writeHead(500);
      res.end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    setHandler(next) {
      handler = next;
    },
    enqueue(...replies) {
      queue.push(...replies);
    },
    reset() {
      requests.length = 0;
      queue.length = 0;
      handler = defaultOpenAiReply;
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
