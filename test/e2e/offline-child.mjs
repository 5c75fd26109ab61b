// Runs inside a fresh network namespace (see offline-network.test.ts): starts the prebuilt server
// (@pixport/server's dist) with the ONNX background remover and the embedded OCR, drives
// remove-background and extract-formatted-text over loopback HTTP, and prints one JSON line.
// Usage: node offline-child.mjs <dataDir> <model.onnx> <shot image> <document image>
import { readFile } from "node:fs/promises";
import net from "node:net";
import { createApiKey, resolveServerConfig, startPixportServer } from "@pixport/server";

const [dataDir, model, shotPath, documentPath] = process.argv.slice(2);

/** Proof that the network is cut: a connection to a public address must fail. */
function outbound() {
  return new Promise((resolve) => {
    const socket = net.connect({ host: "1.1.1.1", port: 443, timeout: 3000 });
    socket.once("connect", () => {
      socket.destroy();
      resolve("connected");
    });
    socket.once("timeout", () => {
      socket.destroy();
      resolve("timeout");
    });
    socket.once("error", (error) => resolve(error.code ?? String(error)));
  });
}

const server = await startPixportServer(
  resolveServerConfig({
    port: 0,
    host: "127.0.0.1",
    dataDir,
    log: false,
    backgroundRemoval: { engine: "onnx", model },
  }),
);
try {
  await server.accounts.setUpgraded("offline", true);
  const { key } = await createApiKey(server.keys, { kind: "live", accountId: "offline" });
  const headers = { "x-api-key": key };
  const upload = async (file, name) => {
    const form = new FormData();
    form.append("image", new Blob([await readFile(file)]), name);
    form.append("name", name);
    const response = await fetch(`${server.url}/v1/images`, { method: "POST", headers, body: form });
    if (response.status !== 201) throw new Error(`upload: ${response.status} ${await response.text()}`);
    return (await response.json()).id;
  };
  const post = async (path, body) => {
    const response = await fetch(`${server.url}${path}`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return { status: response.status, json: await response.json() };
  };
  const shot = await upload(shotPath, "shot.jpg");
  const removed = await post(`/v1/images/${shot}/remove-background`, {});
  let cutout = null;
  if (removed.status === 201) {
    const download = await fetch(`${server.url}/v1/images/${removed.json.id}/download`, { headers });
    cutout = Buffer.from(await download.arrayBuffer()).toString("base64");
  }
  const document = await upload(documentPath, "document.png");
  const markdown = await post(`/v1/images/${document}/extract-formatted-text`, { format: "markdown" });
  console.log(
    JSON.stringify({
      outbound: await outbound(),
      removeStatus: removed.status,
      removed: removed.json,
      cutout,
      markdownStatus: markdown.status,
      markdown: markdown.json,
    }),
  );
} finally {
  await server.close();
}
