import { spawn, spawnSync } from "node:child_process";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { alphaMaskIoU, BACKGROUND_FIXTURES } from "@pixport/testing";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { imglyIsnetModelPath } from "../../adapters/background-onnx/scripts/imgly-isnet.mjs";
import { removeDir, startServer, tempDataDir } from "./harness.js";

// The offline promise, checked literally: remove-background (ONNX model) and extract-formatted-text
// (tesseract) work in the prebuilt server inside a network namespace that has nothing but
// loopback, so no request can leave the machine. Needs `unshare` (util-linux) and `ip`
// (iproute2), and either root or unprivileged user namespaces; `.ci/run` runs on such a machine.
const CHILD = fileURLToPath(new URL("./offline-child.mjs", import.meta.url));
const canUnshare = spawnSync("unshare", ["-rn", "sh", "-c", "ip link set lo up"]).status === 0;

function runOffline(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      "unshare",
      ["-rn", "sh", "-c", 'ip link set lo up && exec "$0" "$@"', process.execPath, CHILD, ...args],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    child.once("error", reject);
    child.once("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("offline image intelligence with the network cut off", () => {
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await tempDataDir();
  });
  afterAll(async () => {
    await removeDir(dataDir);
  });

  // Skipped only off CI on a machine without network namespaces (macOS, locked-down containers);
  // on CI a missing `unshare` fails the test instead of hiding it.
  it.skipIf(!canUnshare && process.env.CI === undefined)(
    "remove-background on the ONNX model and extract-formatted-text answer with no network at all",
    { timeout: 120_000 },
    async () => {
      expect(canUnshare, "unshare -rn (util-linux) and ip (iproute2) are needed for this test").toBe(true);
      const fixture = BACKGROUND_FIXTURES.find((candidate) => candidate.name.includes("two-tone"));
      if (fixture === undefined) throw new Error("the two-tone fixture is missing");
      const shot = path.join(dataDir, "shot.jpg");
      await writeFile(shot, await fixture.render());
      sharp.unblock({ operation: ["VipsForeignLoadSvgBuffer"] });
      const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="640" height="200">
        <rect width="100%" height="100%" fill="white"/>
        <g font-family="DejaVu Sans" fill="black">
          <text x="30" y="64" font-size="48" font-weight="bold">Offline Manual</text>
          <text x="30" y="130" font-size="20">Nothing here leaves the machine.</text>
        </g></svg>`;
      const documentFile = path.join(dataDir, "document.png");
      await writeFile(documentFile, await sharp(Buffer.from(svg)).png().toBuffer());

      const result = await runOffline([
        path.join(dataDir, "server"),
        imglyIsnetModelPath("medium"),
        shot,
        documentFile,
      ]);
      // 0 also says the server's close() settled: the child awaits it at top level, and Node exits
      // 13 when the event loop runs dry before (as it did once the idle native OCR processes were
      // unref'd and the facts scheduler's stop waited for a pause of its own).
      expect(result.code, result.stderr).toBe(0);
      const report = JSON.parse(result.stdout.trim().split("\n").at(-1) ?? "{}");
      // The namespace really has no route out.
      expect(report.outbound).toMatch(/^(ENETUNREACH|EHOSTUNREACH|ECONNREFUSED|EACCES|EPERM)$/);
      expect(report.removeStatus).toBe(201);
      expect(report.removed).toMatchObject({ format: "png", width: fixture.width, height: fixture.height });
      const iou = await alphaMaskIoU(new Uint8Array(Buffer.from(report.cutout, "base64")), fixture);
      expect(iou).toBeGreaterThanOrEqual(0.9);
      expect(report.markdownStatus).toBe(201);
      const lines = (report.markdown.content as string).split("\n");
      expect(lines[0]).toBe("# Offline Manual");
      expect(lines).toContain("Nothing here leaves the machine.");
    },
  );
});

describe("the ONNX engine in the server's config", () => {
  it("a model path that does not load fails the start with INVALID_CONFIGURATION naming it", async () => {
    const dataDir = await tempDataDir();
    try {
      const missing = path.join(dataDir, "no-such-model.onnx");
      const error = await startServer(dataDir, {
        backgroundRemoval: { engine: "onnx", model: missing },
      }).then(
        (server) => server.close().then(() => undefined),
        (reason: unknown) => reason,
      );
      expect(error).toMatchObject({ code: "INVALID_CONFIGURATION" });
      expect((error as Error).message).toContain(missing);
    } finally {
      await removeDir(dataDir);
    }
  });
});
