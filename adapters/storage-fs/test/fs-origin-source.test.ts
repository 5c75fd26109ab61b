import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Colors, describeOriginSourceConformance, solidImage } from "@pixport/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFsOriginSource } from "../src/index.js";

describeOriginSourceConformance({
  name: "fs",
  create: async () => {
    const directory = await mkdtemp(path.join(tmpdir(), "pixport-fs-origin-"));
    return {
      source: createFsOriginSource({ directory }),
      put: async (relative, data) => {
        const file = path.join(directory, ...relative.split("/"));
        await mkdir(path.dirname(file), { recursive: true });
        await writeFile(file, data);
      },
      close: () => rm(directory, { recursive: true, force: true }),
    };
  },
});

describe("fs origin: nothing outside the directory", () => {
  let parent: string;
  let root: string;
  beforeAll(async () => {
    parent = await mkdtemp(path.join(tmpdir(), "pixport-fs-origin-escape-"));
    root = path.join(parent, "root");
    await mkdir(path.join(root, "inside"), { recursive: true });
    const png = await solidImage(4, 4, Colors.green, "png");
    await writeFile(path.join(parent, "secret.png"), png);
    await writeFile(path.join(root, "inside", "ok.png"), png);
    await mkdir(path.join(parent, "root-sibling"));
    await writeFile(path.join(parent, "root-sibling", "x.png"), png);
    await symlink(path.join(parent, "secret.png"), path.join(root, "out.png"));
    await symlink(parent, path.join(root, "outdir"));
    await symlink(path.join(root, "inside", "ok.png"), path.join(root, "in.png"));
  });
  afterAll(() => rm(parent, { recursive: true, force: true }));

  it("answers not-found for symbolic links out of the directory, file or directory", async () => {
    const source = createFsOriginSource({ directory: root });
    expect((await source.get({ segments: ["out.png"], maxBytes: 1e6 })).status).toBe("not-found");
    expect((await source.get({ segments: ["outdir", "secret.png"], maxBytes: 1e6 })).status).toBe(
      "not-found",
    );
  });

  it("follows a symbolic link that stays inside", async () => {
    const source = createFsOriginSource({ directory: root });
    expect((await source.get({ segments: ["in.png"], maxBytes: 1e6 })).status).toBe("found");
  });

  it("refuses segments that climb out even when a caller skips the core's checks", async () => {
    const source = createFsOriginSource({ directory: root });
    const climbed = await source
      .get({ segments: ["..", "secret.png"], maxBytes: 1e6 })
      .catch((error: unknown) => error);
    expect(climbed).toBeInstanceOf(TypeError);
    const sibling = await source
      .get({ segments: ["..", "root-sibling", "x.png"], maxBytes: 1e6 })
      .catch((error: unknown) => error);
    expect(sibling).toBeInstanceOf(TypeError);
    expect((await source.get({ segments: ["inside"], maxBytes: 1e6 })).status, "a directory").toBe(
      "not-found",
    );
  });
});
