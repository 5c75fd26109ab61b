import { Worker } from "node:worker_threads";
import type { EncodedImage, ImageSample, TransformRequest } from "@pixport/core";
import { ErrorCodes, ImagePipelineError, isImagePipelineError } from "@pixport/core";

/** An error as it crosses the thread boundary. */
export interface SerializedError {
  name: string;
  message: string;
  code?: string;
  issues?: ImagePipelineError["issues"];
}

export function serializeError(error: unknown): SerializedError {
  if (isImagePipelineError(error)) {
    return { name: error.name, message: error.message, code: error.code, issues: [...error.issues] };
  }
  if (error instanceof Error) return { name: error.name, message: error.message };
  return { name: "Error", message: String(error) };
}

/** Re-creates a worker's error: pixport errors with their code and issues, `TypeError`s as such. */
export function deserializeError(error: SerializedError): Error {
  if (error.code !== undefined && error.code in ErrorCodes) {
    return new ImagePipelineError(error.code as keyof typeof ErrorCodes, error.message, {
      issues: error.issues ?? [],
    });
  }
  if (error.name === "TypeError") return new TypeError(error.message);
  if (error.name === "RangeError") return new RangeError(error.message);
  return new ImagePipelineError(ErrorCodes.INTERNAL, `jimp worker: ${error.message}`);
}

/** What a worker does: a transform (with the default pixel cap), or a sample of the input. */
export type WorkerTask =
  | { kind: "transform"; request: TransformRequest; maxPixels: number }
  | { kind: "sample"; input: Uint8Array; maxSide: number; maxPixels: number };

/** What a worker is started with. */
export interface WorkerSettings {
  sourceCacheBytes: number;
}

/** A job for the worker. */
export type WorkerJob = WorkerTask & { id: number };

export type WorkerAnswer =
  | { id: number; result: EncodedImage | ImageSample }
  | { id: number; error: SerializedError };

interface PendingJob {
  task: WorkerTask;
  resolve(result: EncodedImage | ImageSample): void;
  reject(error: Error): void;
  timer: NodeJS.Timeout | undefined;
}

interface Slot {
  worker: Worker;
  jobs: Map<number, PendingJob>;
  /** Set when the pool gave the worker up (terminated for a deadline): its events are ignored. */
  retired: boolean;
}

/**
 * The jimp codec's worker threads: jimp decodes, transforms and encodes synchronously, so each
 * transform runs in one of `size` workers (started on first use, kept, `unref`ed so they never
 * hold the process open) and the event loop stays free. Jobs go to the worker with the fewest jobs
 * in flight; a worker that dies fails its jobs with `INTERNAL` and is replaced on the next job.
 */
export class JimpWorkerPool {
  private readonly slots: Slot[] = [];
  private nextId = 0;

  constructor(
    private readonly size: number,
    private readonly script: URL,
    /** Each worker's share of the codec's `sourceCacheBytes` (its own decoded sources). */
    private readonly sourceCacheBytes = 0,
  ) {}

  /**
   * Runs a transform in a worker. With `request.limits.timeoutMs`, a job still running at its
   * deadline rejects with `PROCESSING_TIMEOUT` and its worker is terminated (jimp's synchronous
   * work cannot be interrupted otherwise); the other jobs of that worker are sent to a fresh one.
   */
  run(request: TransformRequest, maxPixels: number): Promise<EncodedImage> {
    return this.submit(
      { kind: "transform", request, maxPixels },
      request.limits?.timeoutMs,
    ) as Promise<EncodedImage>;
  }

  /** Decodes and scales `input` to fit `maxSide` in a worker (see `ImageCodec.sample`). */
  sample(
    input: Uint8Array,
    maxSide: number,
    maxPixels: number,
    timeoutMs: number | undefined,
  ): Promise<ImageSample> {
    return this.submit({ kind: "sample", input, maxSide, maxPixels }, timeoutMs) as Promise<ImageSample>;
  }

  private submit(task: WorkerTask, timeoutMs: number | undefined): Promise<EncodedImage | ImageSample> {
    return new Promise((resolve, reject) => {
      const job: PendingJob = { task, resolve, reject, timer: undefined };
      const id = this.dispatch(job);
      if (typeof timeoutMs === "number" && Number.isFinite(timeoutMs) && timeoutMs > 0) {
        job.timer = setTimeout(() => this.expire(id, timeoutMs), timeoutMs);
        job.timer.unref();
      }
    });
  }

  private dispatch(job: PendingJob, id = this.nextId++): number {
    const slot = this.pick();
    slot.jobs.set(id, job);
    // Structured clone copies the bytes: the caller's buffer (a cache entry, maybe) stays its own.
    slot.worker.postMessage({ id, ...job.task } satisfies WorkerJob);
    return id;
  }

  private expire(id: number, timeoutMs: number): void {
    const slot = this.slots.find((candidate) => candidate.jobs.has(id));
    if (slot === undefined) return;
    const job = slot.jobs.get(id)!;
    slot.jobs.delete(id);
    slot.retired = true;
    this.slots.splice(this.slots.indexOf(slot), 1);
    void slot.worker.terminate();
    job.reject(
      new ImagePipelineError(
        ErrorCodes.PROCESSING_TIMEOUT,
        `the work took longer than ${Math.round(timeoutMs / 100) / 10} s and was stopped`,
      ),
    );
    // The worker's other jobs did nothing wrong: they start again on another worker.
    const others = [...slot.jobs.entries()];
    slot.jobs.clear();
    for (const [otherId, other] of others) this.dispatch(other, otherId);
  }

  async close(): Promise<void> {
    const slots = this.slots.splice(0);
    await Promise.all(slots.map((slot) => slot.worker.terminate()));
  }

  private pick(): Slot {
    if (this.slots.length < this.size) {
      const idle = this.slots.find((slot) => slot.jobs.size === 0);
      if (idle !== undefined) return idle;
      return this.spawn();
    }
    return this.slots.reduce((best, slot) => (slot.jobs.size < best.jobs.size ? slot : best));
  }

  private spawn(): Slot {
    // The worker is the built script: it resolves packages by their default exports even when
    // this process runs with a `--conditions` flag (the test runner's `pixport-source`).
    const worker = new Worker(this.script, {
      execArgv: withoutConditions(process.execArgv),
      workerData: { sourceCacheBytes: this.sourceCacheBytes } satisfies WorkerSettings,
    });
    worker.unref();
    const slot: Slot = { worker, jobs: new Map(), retired: false };
    worker.on("message", (answer: WorkerAnswer) => {
      const job = slot.jobs.get(answer.id);
      if (job === undefined) return;
      slot.jobs.delete(answer.id);
      clearTimeout(job.timer);
      if ("error" in answer) job.reject(deserializeError(answer.error));
      else job.resolve(answer.result);
    });
    const fail = (reason: string) => {
      if (slot.retired) return;
      const index = this.slots.indexOf(slot);
      if (index >= 0) this.slots.splice(index, 1);
      for (const job of slot.jobs.values()) {
        clearTimeout(job.timer);
        job.reject(new ImagePipelineError(ErrorCodes.INTERNAL, `A jimp worker ${reason}.`));
      }
      slot.jobs.clear();
    };
    worker.on("error", (error) => fail(`failed: ${error.message}`));
    worker.on("exit", (code) => fail(`exited with code ${code}`));
    this.slots.push(slot);
    return slot;
  }
}

/** `argv` without `--conditions` / `-C` flags (and their values). */
function withoutConditions(argv: readonly string[]): string[] {
  const kept: string[] = [];
  for (let index = 0; index < argv.length; index += 1) {
    const flag = argv[index]!;
    if (flag === "--conditions" || flag === "-C") {
      index += 1;
      continue;
    }
    if (flag.startsWith("--conditions=") || flag.startsWith("-C=")) continue;
    kept.push(flag);
  }
  return kept;
}
