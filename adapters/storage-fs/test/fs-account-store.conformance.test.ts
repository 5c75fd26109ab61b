import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { describeAccountStoreConformance } from "@pixport/testing";
import { afterAll } from "vitest";
import { createFsAccountStore } from "../src/index.js";

const roots: string[] = [];
afterAll(async () => {
  await Promise.all(roots.map((root) => rm(root, { recursive: true, force: true })));
});

// `peer` is a second store on the same directory: another process (the CLI next to the server).
describeAccountStoreConformance({
  name: "fs",
  create: async () => {
    const root = await mkdtemp(path.join(tmpdir(), "pixport-accounts-"));
    roots.push(root);
    return { store: createFsAccountStore({ root }), peer: async () => createFsAccountStore({ root }) };
  },
});
