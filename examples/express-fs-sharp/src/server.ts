import { createApp } from "./app.js";

const port = Number(process.env.PORT ?? 3000);
const { app, createKey } = createApp({
  dataDir: process.env.DATA_DIR ?? ".pixport-example-data",
  publicBaseUrl: `http://localhost:${port}`,
});
const key = await createKey("test", "example");
app.listen(port, () => {
  process.stdout.write(`listening on http://localhost:${port} (pixport under /pixport)\ntest key: ${key}\n`);
});
