// Entry of the jimp codec's worker threads (built to dist/worker.js; see pool.ts).
import { parentPort, workerData } from "node:worker_threads";
import { SourceCache } from "@pixport/core/adapter-kit";
import type { Bitmap } from "./bitmap.js";
import { sampleInThread, transformInThread } from "./create-jimp-codec.js";
import { serializeError, type WorkerAnswer, type WorkerJob, type WorkerSettings } from "./pool.js";

const port = parentPort;
if (port === null) throw new Error("@pixport/codec-jimp's worker must run in a worker thread.");

// This worker's decoded sources: its share of the codec's `sourceCacheBytes`.
const { sourceCacheBytes } = workerData as WorkerSettings;
const kept = sourceCacheBytes > 0 ? new SourceCache<Bitmap>(sourceCacheBytes) : undefined;

port.on("message", (job: WorkerJob) => {
  const { id } = job;
  const work =
    job.kind === "sample"
      ? sampleInThread(job.input, job.maxSide, job.maxPixels)
      : transformInThread(job.request, job.maxPixels, kept);
  work.then(
    (result) => {
      const data = result.data;
      // Move the encoded bytes back without a copy when they own their whole buffer.
      const transfer =
        data.byteOffset === 0 && data.byteLength === data.buffer.byteLength
          ? [data.buffer as ArrayBuffer]
          : [];
      port.postMessage({ id, result } satisfies WorkerAnswer, transfer);
    },
    (error: unknown) => port.postMessage({ id, error: serializeError(error) } satisfies WorkerAnswer),
  );
});
