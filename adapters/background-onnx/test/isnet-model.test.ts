import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createSharpBackgroundRemover } from "@pixport/background-sharp";
import { ErrorCodes, isImagePipelineError } from "@pixport/core";
import {
  alphaMaskIoU,
  childProcesses,
  EASY_BACKGROUND_FIXTURES,
  HARD_BACKGROUND_FIXTURES,
  type MaskFixture,
} from "@pixport/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { imglyIsnetMissing, imglyIsnetModelPath } from "../scripts/imgly-isnet.mjs";
import { createOnnxBackgroundRemover, type OnnxBackgroundRemover } from "../src/index.js";

// A real segmentation model: IS-Net (fp16 weights) as IMG.LY ships it in the AGPL-licensed
// @imgly/background-removal-data package, a benchmark peer (bench/peers) reassembled offline from
// its chunks. Skipped, with the install command as the reason, where that peer is not installed.
// About 1 s per call on 2 cores, whatever the image size (the model sees 1024 x 1024).

/** Inference processes forked by this test process. */
const inferenceProcesses = () => childProcesses({ cmdline: "inference-process.cjs" });

/** CPU time (user + system) a running process has used, in ms. */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // clock ticks of 10 ms
}

function isRunning(pid: number): boolean {
  try {
    const state = readFileSync(`/proc/${pid}/stat`, "utf8");
    return state.slice(state.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

async function waitFor(check: () => boolean, what: string): Promise<void> {
  const until = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > until) throw new Error(`Timed out waiting for ${what}.`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A pid no process has now (a finished child's). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], {
    encoding: "utf8",
  });
  return Number(child.stdout);
}

const request = async (fixture: MaskFixture) => ({
  image: await fixture.render(),
  width: fixture.width,
  height: fixture.height,
});

const missing = imglyIsnetMissing();

describe.skipIf(missing !== undefined)(
  `background-onnx on IS-Net${missing === undefined ? "" : ` (skipped: ${missing})`}`,
  () => {
    let remover: OnnxBackgroundRemover;
    beforeAll(async () => {
      remover = await createOnnxBackgroundRemover({ model: imglyIsnetModelPath("medium"), family: "isnet" });
    }, 60_000);
    afterAll(async () => {
      await remover.close();
    });

    it("reads the model's fixed 1024 x 1024 NCHW input from its metadata", () => {
      expect(remover.settings).toMatchObject({
        layout: "nchw",
        inputWidth: 1024,
        inputHeight: 1024,
        inputName: "input",
        outputName: "output",
      });
    });

    it("beats the embedded remover on the hard fixtures where a border model cannot work", {
      timeout: 120_000,
    }, async () => {
      const embedded = createSharpBackgroundRemover();
      const rows: string[] = [];
      let wins = 0;
      for (const fixture of HARD_BACKGROUND_FIXTURES) {
        const input = await request(fixture);
        const [onnxIoU, sharpIoU] = await Promise.all([
          remover.remove(input).then((png) => alphaMaskIoU(png, fixture)),
          embedded.remove(input).then((png) => alphaMaskIoU(png, fixture)),
        ]);
        rows.push(`${fixture.name}: onnx ${onnxIoU.toFixed(3)}, sharp ${sharpIoU.toFixed(3)}`);
        if (onnxIoU >= 0.9 && onnxIoU > sharpIoU + 0.1) wins += 1;
      }
      console.log(`IoU on the hard fixtures:\n  ${rows.join("\n  ")}`);
      // Measured: the two-tone wall and table, and the stripes (2 of 4). The ring's hole is not
      // one (the embedded remover clears enclosed background: IoU 1.000 against IS-Net's 0.99), and the low-contrast disc is the embedded remover's (a salient-object model
      // drops the pale subject).
      expect(wins, rows.join("; ")).toBeGreaterThanOrEqual(2);
    });

    it("cuts out every easy fixture too (IoU >= 0.95 each)", { timeout: 120_000 }, async () => {
      for (const fixture of EASY_BACKGROUND_FIXTURES.slice(0, 3)) {
        const iou = await alphaMaskIoU(await remover.remove(await request(fixture)), fixture);
        expect(iou, fixture.name).toBeGreaterThanOrEqual(0.95);
      }
    });

    it("answers MODEL_TIMEOUT past its deadline, also to a call queued behind the overrunning one", {
      timeout: 60_000,
    }, async () => {
      const hurried = await createOnnxBackgroundRemover({
        model: imglyIsnetModelPath("medium"),
        timeoutMs: 100,
      });
      const input = await request(EASY_BACKGROUND_FIXTURES[0]!);
      const errors = await Promise.all(
        [input, input].map((call) => hurried.remove(call).catch((reason: unknown) => reason)),
      );
      for (const error of errors) {
        expect(isImagePipelineError(error) && error.code).toBe(ErrorCodes.MODEL_TIMEOUT);
        expect((error as { retryAfterSeconds?: number }).retryAfterSeconds).toBe(1);
      }
      // close() waits for anything still in flight, then stops the processes.
      await hurried.close();
      const closed = await hurried.remove(input).catch((reason: unknown) => reason);
      expect(isImagePipelineError(closed) && closed.code).toBe(ErrorCodes.MODEL_UNAVAILABLE);
    });

    it("kills an inference whose caller gave up, with its process, and serves the next call from a new one", {
      timeout: 60_000,
    }, async () => {
      const fixture = EASY_BACKGROUND_FIXTURES[0]!;
      const input = await request(fixture);
      const [before] = inferenceProcesses();
      expect(before, "one inference process").toBeDefined();
      const controller = new AbortController();
      const call = remover.remove(input, { signal: controller.signal }).catch((reason: unknown) => reason);
      // Abort once the inference is surely running: its process has used 300 ms of CPU.
      const startTicks = cpuMs(before!);
      while (cpuMs(before!) - startTicks < 300) await new Promise((resolve) => setTimeout(resolve, 20));
      controller.abort(new Error("client went away"));
      expect(String(await call)).toContain("client went away");
      await waitFor(() => !isRunning(before!), "the inference process to exit");
      const iou = await alphaMaskIoU(await remover.remove(input), fixture);
      expect(iou).toBeGreaterThanOrEqual(0.95);
      const after = inferenceProcesses();
      expect(after).toHaveLength(1);
      expect(after[0]).not.toBe(before);
    });

    it("removes its prepared model on close, and a crashed owner's at the next start", {
      timeout: 60_000,
    }, async () => {
      const prepared = () =>
        readdirSync(tmpdir()).filter((name) => name.startsWith(`pixport-onnx-${process.pid}-`)).length;
      const count = prepared();
      const second = await createOnnxBackgroundRemover({ model: imglyIsnetModelPath("medium") });
      expect(prepared()).toBe(count + 1);
      await second.close();
      expect(prepared()).toBe(count);
      // A directory named after a process that no longer runs is swept by the next remover.
      const orphan = mkdtempSync(path.join(tmpdir(), `pixport-onnx-${deadPid()}-`));
      const third = await createOnnxBackgroundRemover({ model: imglyIsnetModelPath("medium") });
      await third.close();
      expect(existsSync(orphan)).toBe(false);
    });

    it("keeps the event loop free while the model runs (inference is in a child process)", {
      timeout: 60_000,
    }, async () => {
      const input = await request(EASY_BACKGROUND_FIXTURES[2]!);
      let last = performance.now();
      let longestGap = 0;
      const ticker = setInterval(() => {
        const now = performance.now();
        longestGap = Math.max(longestGap, now - last);
        last = now;
      }, 5);
      const started = performance.now();
      await remover.remove(input);
      const duration = performance.now() - started;
      clearInterval(ticker);
      // The stretch since the last tick counts too (a loop blocked all along never ticks at all).
      longestGap = Math.max(longestGap, performance.now() - last);
      // On the calling thread the inference (70 % or more of the call, measured) would be one gap.
      expect(
        longestGap,
        `longest gap ${longestGap.toFixed(0)} ms of a ${duration.toFixed(0)} ms call`,
      ).toBeLessThan(duration / 2);
    });

    it("a call aborted while queued behind another never runs; the other completes", {
      timeout: 60_000,
    }, async () => {
      const fixture = EASY_BACKGROUND_FIXTURES[1]!;
      const input = await request(fixture);
      const controller = new AbortController();
      const first = remover.remove(input);
      const second = remover.remove(input, { signal: controller.signal });
      setTimeout(() => controller.abort(new Error("client went away")), 50);
      await expect(second).rejects.toThrow("client went away");
      expect(await alphaMaskIoU(await first, fixture)).toBeGreaterThanOrEqual(0.95);
    });
  },
);
