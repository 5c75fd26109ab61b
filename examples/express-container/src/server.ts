import { createApp } from "./app.js";

const port = Number(process.env.PORT ?? 3000);
const { app, createKey } = await createApp({ dataDir: process.env.DATA_DIR ?? ".pixport-example-data" });
const key = await createKey("live", "example");
app.listen(port, () => {
  process.stdout.write(`listening on http://localhost:${port} (pixport under /pixport)\nlive key: ${key}\n`);
});
