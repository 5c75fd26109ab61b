import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { sweepTemporaryDirectories } from "@pixport/core/adapter-kit";
import type { InferenceSession } from "onnxruntime-node";
import { firstReply, forkInference, RUNTIME_PATH } from "./inference-env.js";

const TEMP_PREFIX = "pixport-onnx-";

/**
 * Widens float16 tensors and optimises the graph in a short-lived process, writing the model the
 * inference processes load: the optimiser's transient memory (about 0.25 GB for IS-Net) never
 * reaches them. Answers the prepared model's path inside a new private temporary directory.
 */
export async function prepareModel(
  model: string | Uint8Array,
  sessionOptions: InferenceSession.SessionOptions,
): Promise<{ directory: string; file: string }> {
  // Prepared models left by processes that no longer run (a crash skips `close()`).
  await sweepTemporaryDirectories(TEMP_PREFIX, { directory: tmpdir(), readdir, rm, process });
  const directory = await mkdtemp(path.join(tmpdir(), `${TEMP_PREFIX}${process.pid}-`));
  const file = path.join(directory, "model.onnx");
  const child = forkInference();
  try {
    const reply = firstReply<{ type: string; message?: string }>(child, "model preparation");
    child.send({ type: "prepare", runtimePath: RUNTIME_PATH, model, target: file, sessionOptions });
    const answer = await reply;
    if (answer.type !== "prepared") throw new Error(answer.message ?? "the model could not be prepared");
    return { directory, file };
  } catch (error) {
    await rm(directory, { recursive: true, force: true });
    throw error;
  } finally {
    child.kill("SIGKILL");
  }
}
