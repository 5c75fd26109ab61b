import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { createBlobStorePublisher } from "@pixport/core";
import { FILE_EXTENSIONS } from "@pixport/core/adapter-kit";
import { describeImagePublisherConformance } from "@pixport/testing";
import { afterAll } from "vitest";
import { createFsBlobStore } from "../src/index.js";

const roots: string[] = [];
afterAll(async () => {
  await Promise.all(roots.map((root) => rm(root, { recursive: true, force: true })));
});

// The prebuilt server's embedded publishing: the core's blob-store publisher between two directories.
describeImagePublisherConformance({
  name: "blob-store publisher over the filesystem",
  create: async () => {
    const root = await mkdtemp(path.join(tmpdir(), "pixport-publisher-"));
    roots.push(root);
    const source = createFsBlobStore({ root: path.join(root, "blobs") });
    const target = createFsBlobStore({ root: path.join(root, "public") });
    const publicBaseUrl = "http://localhost:3000";
    return {
      source,
      publicBaseUrl,
      publisher: createBlobStorePublisher({ source, target, publicBaseUrl }),
      readPublic: (id, format) => target.get(`images/${id}.${FILE_EXTENSIONS[format]}`),
    };
  },
});
