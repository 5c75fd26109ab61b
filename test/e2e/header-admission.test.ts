import { readFileSync } from "node:fs";
import { hugeCanvasAnimatedWebp, losslessWebpBomb, waitUntil } from "@pixport/testing";
import { afterAll, describe, expect, it } from "vitest";
import { call, removeDir, spawnPrebuiltServer, stopPrebuiltServer, tempDataDir } from "./harness.js";

/** Peak resident memory of a process (VmHWM), bytes. */
function peakRss(pid: number): number {
  const kilobytes = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  return Number(kilobytes) * 1024;
}

// A refusal the header decides must cost next to nothing, on the default start (the launcher,
// tcmalloc when the system has it, as `pnpm start` runs): libwebp's header read allocates the
// declared canvas and tcmalloc's calloc touches it, so a 38-byte file cost 1 GB of RSS before its
// 422. Measured in the server's own process, with four of each file at once.
describe("admission from the header, with nothing allocated", () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const step of cleanup.reverse()) await step();
  });

  it("refuses four 16383 x 16383 WebPs at once with the server's peak growing by less than 64 MB", async () => {
    const dataDir = await tempDataDir();
    cleanup.push(() => removeDir(dataDir));
    const node = await spawnPrebuiltServer(dataDir, {}, { launcher: true });
    cleanup.push(() => stopPrebuiltServer(node));
    await waitUntil(() => /live key:.*\n\s+\S+/.test(node.output()), "the first-start keys");
    const key = /live key:.*\n\s+(\S+)/.exec(node.output())?.[1] as string;
    const pid = node.child.pid as number;
    const files = [losslessWebpBomb(), await hugeCanvasAnimatedWebp(16_383, 2)];
    // One request first, so the peak below is the refusals' and not the first request's warm-up.
    const warm = await call(node.url, "GET", "/v1/images", { key });
    expect(warm.status).toBe(200);
    const before = peakRss(pid);
    const answers = await Promise.all(
      files.flatMap((bytes, index) =>
        Array.from({ length: 4 }, () => {
          const form = new FormData();
          form.append("name", `bomb-${index}`);
          form.append("image", new Blob([bytes]), "bomb.webp");
          return call(node.url, "POST", "/v1/images/upload", { key, form });
        }),
      ),
    );
    for (const answer of answers) {
      expect(answer.status, JSON.stringify(answer.json)).toBe(422);
      expect(answer.json.code).toBe("IMAGE_TOO_LARGE");
      expect(answer.json.errors[0]).toMatch(/16383 x 16383\)$/);
    }
    const growth = peakRss(pid) - before;
    expect(growth, `peak RSS grew by ${Math.round(growth / 1e6)} MB`).toBeLessThan(64 * 1024 * 1024);
  }, 60_000);
});
