// Entry of the jimp codec's worker threads (built to dist/worker.js; see pool.ts).
import { parentPort } from "node:worker_threads";
import { transformInThread } from "./create-jimp-codec.js";
import { serializeError, type WorkerAnswer, type WorkerJob } from "./pool.js";

const port = parentPort;
if (port === null) throw new Error("@pixport/codec-jimp's worker must run in a worker thread.");

port.on("message", ({ id, request, maxPixels }: WorkerJob) => {
  transformInThread(request, maxPixels).then(
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
