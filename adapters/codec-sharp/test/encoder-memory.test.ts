import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { TransformStep } from "@pixport/core/adapter-kit";
import { estimateJobBytes } from "@pixport/core/internal";
import sharp from "sharp";
import { afterAll, describe, expect, it } from "vitest";

// The memory budget's estimate of a job covers its encoder: measured as the peak RSS of a real
// encode in a child process on the default allocator (the prebuilt server's launcher), at a size
// small enough for a test. bench/memory.mjs measures the same at the largest allowed sizes.

const run = promisify(execFile);
const launcher = fileURLToPath(new URL("../../../packages/server/bin/with-allocator", import.meta.url));
const child = fileURLToPath(new URL("./encode-peak-child.mjs", import.meta.url));

/** A photo-like JPEG (gradients and noise) of `side` x `side`. */
async function photo(side: number): Promise<Buffer> {
  const raw = Buffer.alloc(side * side * 3);
  let seed = 7;
  for (let index = 0; index < side * side; index += 1) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    const noise = (seed >> 16) % 32;
    const x = index % side;
    const y = Math.floor(index / side);
    raw[index * 3] = ((x * 255) / side + noise) & 255;
    raw[index * 3 + 1] = ((y * 255) / side + noise) & 255;
    raw[index * 3 + 2] = (((x + y) * 255) / (2 * side)) & 255;
  }
  return sharp(raw, { raw: { width: side, height: side, channels: 3 } })
    .jpeg({ quality: 85 })
    .toBuffer();
}

describe("the memory estimate against a real encode", () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it("covers the peak RSS of a rotated AVIF (2048 x 2048 out), which decode and passes alone do not", async () => {
    const dir = await mkdtemp(join(tmpdir(), "pixport-encoder-memory-"));
    dirs.push(dir);
    const source = join(dir, "source.jpg");
    const side = 1448;
    await writeFile(source, await photo(side));
    const steps: TransformStep[] = [
      { type: "rotate", angle: 45, background: { r: 0, g: 0, b: 0, alpha: 1 } },
    ];
    const { stdout } = await run("sh", [
      launcher,
      process.execPath,
      child,
      JSON.stringify({ source, steps, format: "avif" }),
    ]);
    const result = JSON.parse(stdout.trim().split("\n").at(-1) as string);
    expect(result.width).toBe(2048);
    const growth = result.peak - result.baseline;
    const input = { width: side, height: side };
    const estimate = estimateJobBytes(input, steps, 1, "avif");
    const mb = (bytes: number) => `${Math.round(bytes / 1e6)} MB`;
    expect(growth, `peak grew ${mb(growth)}, estimate ${mb(estimate)}`).toBeLessThanOrEqual(estimate);
    // Without the encoder's working set the estimate falls short of what the encode really holds.
    expect(growth, `peak grew ${mb(growth)}`).toBeGreaterThan(estimateJobBytes(input, steps));
  }, 120_000);
});
