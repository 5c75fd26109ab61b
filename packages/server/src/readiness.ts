import { type DependencyContainer, resolve, Tokens } from "@pixport/container";
import type { Express } from "express";
import type { Lifecycle } from "./lifecycle.js";

/** How long one store may take to answer a readiness probe. */
const PROBE_DEADLINE_MS = 1_000;

/**
 * `GET /healthz` (liveness: the process answers) and `GET /readyz` (readiness: 200 while the
 * server takes traffic; 503 while it starts, answered by the lifecycle gate, and from the moment
 * `close()` begins, before any connection is drained). Readiness probes the stores every request
 * needs, each with a short deadline, and names what failed: the image records, the private blob
 * store and the key store (Redis, when configured).
 */
export function mountHealthRoutes(app: Express, lifecycle: Lifecycle, container: DependencyContainer): void {
  app.get("/healthz", (_request, response) => {
    response.json({ status: "ok" });
  });
  const probes = storeProbes(container);
  app.get("/readyz", (_request, response) => {
    if (lifecycle.state() === "draining") {
      response.status(503).setHeader("Retry-After", "1").json({ status: "draining" });
      return;
    }
    void failedProbes(probes).then((failed) => {
      if (failed.length === 0) response.json({ status: "ready" });
      else response.status(503).setHeader("Retry-After", "1").json({ status: "unready", failed });
    });
  });
}

function storeProbes(container: DependencyContainer): Record<string, () => Promise<unknown>> {
  const blobStore = resolve(container, Tokens.BlobStore);
  const imageRepository = resolve(container, Tokens.ImageRepository);
  const keys = resolve(container, Tokens.KeyStore);
  return {
    images: () => imageRepository.get("image_readinessprobe000000000"),
    blobs: () => blobStore.stat("readyz/probe"),
    keys: () => keys.findByHash("0".repeat(64)),
  };
}

/** The names of the probes that failed or did not answer in time. */
async function failedProbes(probes: Record<string, () => Promise<unknown>>): Promise<string[]> {
  const results = await Promise.all(
    Object.entries(probes).map(async ([name, probe]) => {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error("no answer within 1 s")), PROBE_DEADLINE_MS);
      });
      try {
        await Promise.race([probe(), deadline]);
        return null;
      } catch {
        return name;
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  return results.filter((name): name is string => name !== null);
}
