import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Colors, decodeRaw, halvesImage } from "@pixport/testing";
import { afterAll, describe, expect, it } from "vitest";
import { runChain } from "../src/run-chain.js";

const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe("example: script-fs-sharp", () => {
  it("runs upload → resize → rotate → blur → convert → publish → download on the filesystem", async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), "pixport-example-script-"));
    dirs.push(dataDir);
    const input = await halvesImage(640, 400, Colors.red, Colors.blue, "jpeg");
    const result = await runChain({ dataDir, input, name: "halves" });
    expect(result.images.map((image) => [image.width, image.height, image.format])).toEqual([
      [640, 400, "jpeg"],
      [320, 200, "jpeg"],
      [200, 320, "jpeg"],
      [200, 320, "jpeg"],
      [200, 320, "webp"],
    ]);
    expect(result.images.at(-1)?.name).toBe("thumbnail");
    expect(result.publicUrl).toBe(`https://cdn.example.com/images/${result.images.at(-1)?.id}.webp`);
    const raw = await decodeRaw(result.output);
    expect([raw.width, raw.height]).toEqual([200, 320]);
    // Rotated clockwise: the red left half is now on top.
    const top = raw.data[(20 * raw.width + 100) * 4] ?? 0;
    expect(top).toBeGreaterThan(200);
    expect(await readdir(path.join(dataDir, "public", "images"))).toContain(
      `${result.images.at(-1)?.id}.webp`,
    );
  });
});
