import { type OpenAiCompatibleServer, startOpenAiCompatibleServer } from "@pixport/testing";
import { afterAll, beforeAll, beforeEach } from "vitest";

/**
 * The loopback OpenAI-compatible provider of a test file: started once before its tests (and
 * handed to `started`), its recorded requests and queued answers cleared before each test,
 * closed after them.
 */
export function useLoopbackProvider(started: (provider: OpenAiCompatibleServer) => void): void {
  let provider: OpenAiCompatibleServer;
  beforeAll(async () => {
    provider = await startOpenAiCompatibleServer();
    started(provider);
  });
  afterAll(() => provider.close());
  beforeEach(() => provider.reset());
}
