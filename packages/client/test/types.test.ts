/**
 * Type-level tests: `tsc` (the repository's typecheck step) compiles this file, so every
 * `@ts-expect-error` below must be an error, or the typecheck fails ("unused directive"). The
 * vitest half checks that the committed generated types are what openapi-typescript makes now.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, expectTypeOf, it } from "vitest";
import {
  createPixportClient,
  type Image,
  type OperationBody,
  type OperationResult,
  type PixportApiError,
} from "../src/index.js";

const client = createPixportClient({ baseUrl: "http://127.0.0.1:1", apiKey: "test_x" });

/** Never called: only compiled. */
export function compileOnly() {
  void client.images.resize("image_x", { width: 800, fit: "cover", letterbox_color: "#000" });
  // @ts-expect-error a misspelt field does not compile
  void client.images.resize("image_x", { widht: 800 });
  // @ts-expect-error an unknown fit does not compile
  void client.images.resize("image_x", { fit: "stretch" });
  // @ts-expect-error width is a number
  void client.images.resize("image_x", { width: "800" });
  void client.images.transform("image_x", { steps: [{ op: "resize", width: 10 }] });
  // @ts-expect-error a step's op is one of the transform steps
  void client.images.transform("image_x", { steps: [{ op: "resise", width: 10 }] });
  // @ts-expect-error name is required by upload
  void client.images.upload({ image: new Uint8Array() });
  // @ts-expect-error the list query has take and from only
  void client.images.list({ limit: 5 });
  // @ts-expect-error no such operation
  void client.images.sharpen("image_x", {});
}

describe("the client's types", () => {
  it("are exact for bodies and results", () => {
    expectTypeOf<OperationBody<"resize">>().toHaveProperty("letterbox_color");
    expectTypeOf<OperationBody<"rotate">>().toHaveProperty("background_color");
    expectTypeOf<OperationResult<"resize">>().toEqualTypeOf<Image>();
    expectTypeOf<OperationResult<"visualize">>().toEqualTypeOf<{ response: string }>();
    expectTypeOf(client.images.get).returns.resolves.toEqualTypeOf<Image>();
    expectTypeOf<PixportApiError["errors"]>().toEqualTypeOf<readonly string[] | undefined>();
    expect(typeof compileOnly).toBe("function");
  });

  it("are generated from the committed OpenAPI document (no drift)", async () => {
    const root = fileURLToPath(new URL("..", import.meta.url));
    const dir = await mkdtemp(path.join(tmpdir(), "pixport-client-"));
    try {
      const output = path.join(dir, "schema.gen.ts");
      const cli = path.join(root, "node_modules", "openapi-typescript", "bin", "cli.js");
      await promisify(execFile)(process.execPath, [
        cli,
        path.join(root, "..", "http", "openapi.json"),
        "--default-non-nullable",
        "false",
        "--output",
        output,
      ]);
      expect(await readFile(path.join(root, "src", "schema.gen.ts"), "utf8")).toBe(
        await readFile(output, "utf8"),
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
