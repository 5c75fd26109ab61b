import { createApp } from "./app.js";

const port = Number(process.env.PORT ?? 3000);
const { app, createKey } = await createApp({
  dataDir: process.env.DATA_DIR ?? ".pixport-example-data",
  fastify: { logger: true },
});
const key = await createKey("test", "example");
await app.listen({ port, host: "127.0.0.1" });
app.log.info({ key }, "pixport under /pixport; a fresh test key");
