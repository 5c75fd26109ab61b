import { startRedisServer, type TestRedisServer } from "@pixport/testing";
import { Redis } from "ioredis";
import { afterAll, beforeAll } from "vitest";

/**
 * A private Redis server for one test file: started before its tests, stopped after them with
 * every client `connect` made. Clients fail fast during an outage, as the README recommends for
 * servers; `connect` resolves once the client is ready.
 */
export function useRedisServer(): {
  /** The running server (after `beforeAll`). */
  server(): TestRedisServer;
  connect(): Promise<Redis>;
  /** Resolves once `client` is ready (again, after an outage). */
  ready(client: Redis): Promise<Redis>;
} {
  let server: TestRedisServer | undefined;
  const clients: Redis[] = [];
  const ready = async (client: Redis) => {
    if (client.status !== "ready") await new Promise((resolve) => client.once("ready", resolve));
    return client;
  };
  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterAll(async () => {
    for (const client of clients) client.disconnect();
    await server?.stop();
  });
  return {
    server: () => server!,
    ready,
    connect() {
      const client = new Redis(server!.url, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
      client.on("error", () => {});
      clients.push(client);
      return ready(client);
    },
  };
}
