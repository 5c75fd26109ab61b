import type { ChildProcess } from "node:child_process";
import { ErrorCodes, ImagePipelineError } from "@pixport/core";
import { type Release, Semaphore } from "@pixport/core/adapter-kit";
import type { InferenceSession } from "onnxruntime-node";
import { forkInference, RUNTIME_PATH } from "./inference-env.js";
import type { InputInfo, ResolvedSettings } from "./settings.js";

export type ProcessReply =
  | { type: "ready"; inputNames: string[]; outputNames: string[]; inputs: InputInfo[] }
  | { type: "failed"; message: string }
  | { id: number; mask: Uint8Array; width: number; height: number }
  | { id: number; error: { code: string; message: string } };

export interface MaskMap {
  mask: Uint8Array;
  width: number;
  height: number;
}

/** One inference process holding one session. */
export class InferenceProcess {
  readonly ready: Promise<Extract<ProcessReply, { type: "ready" }>>;
  private readonly child: ChildProcess;
  private readonly pending = new Map<number, { resolve(map: MaskMap): void; reject(error: Error): void }>();
  private nextId = 0;
  private exited = false;

  constructor(model: string, sessionOptions: InferenceSession.SessionOptions) {
    this.child = forkInference();
    this.ready = new Promise((resolve, reject) => {
      this.child.on("message", (reply: ProcessReply) => {
        if ("type" in reply) {
          if (reply.type === "ready") resolve(reply);
          else reject(new Error(reply.message));
          return;
        }
        const job = this.pending.get(reply.id);
        if (job === undefined) return;
        this.pending.delete(reply.id);
        if ("error" in reply) {
          const code =
            reply.error.code in ErrorCodes ? (reply.error.code as keyof typeof ErrorCodes) : "INTERNAL";
          job.reject(new ImagePipelineError(ErrorCodes[code], reply.error.message));
        } else {
          job.resolve({ mask: reply.mask, width: reply.width, height: reply.height });
        }
      });
      const fail = (error: Error) => {
        this.exited = true;
        reject(error);
        for (const job of this.pending.values()) job.reject(error);
        this.pending.clear();
      };
      this.child.on("error", (error) =>
        fail(
          new ImagePipelineError(ErrorCodes.MODEL_UNAVAILABLE, `The model process failed: ${error.message}`),
        ),
      );
      this.child.on("exit", (code, signal) =>
        fail(
          new ImagePipelineError(
            ErrorCodes.MODEL_UNAVAILABLE,
            `The model process exited (${signal ?? `code ${code}`}).`,
          ),
        ),
      );
    });
    // Referenced (keeps the host's event loop alive) only while it loads or has jobs.
    this.ready.then(
      () => this.settle(),
      () => {},
    );
    this.child.send({ type: "load", runtimePath: RUNTIME_PATH, model, sessionOptions });
  }

  /** Lets the host exit while this process is idle. */
  private settle(): void {
    if (this.pending.size > 0) return;
    this.child.unref();
    (this.child.channel as { unref?(): void } | undefined)?.unref?.();
  }

  get alive(): boolean {
    return !this.exited;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** The model's mask of `rgb`: at the model's output size, or scaled in the process to `target`. */
  run(
    rgb: Uint8Array,
    settings: ResolvedSettings,
    target?: { width: number; height: number },
  ): Promise<MaskMap> {
    const id = this.nextId++;
    this.child.ref();
    (this.child.channel as { ref?(): void } | undefined)?.ref?.();
    const result = new Promise<MaskMap>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.child.send({ id, rgb, settings, target });
    });
    return result.finally(() => this.settle());
  }

  /** Stops the process at once, an inference in progress with it. */
  async terminate(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) {
      this.exited = true;
      return;
    }
    const exited = new Promise<void>((resolve) => this.child.once("exit", () => resolve()));
    this.child.ref(); // until it is gone
    this.exited = true;
    this.child.kill("SIGKILL");
    await exited;
  }
}

/**
 * The inference processes of one remover: at most `size`, each running one inference at a time;
 * calls wait in a first-in, first-out queue (a {@link Semaphore} of `size` slots). A process that
 * died is replaced on the next call.
 */
export class ProcessPool {
  private readonly idle: InferenceProcess[] = [];
  private readonly slots: Semaphore;
  /** Processes in use, each with the release of its slot. */
  private readonly busy = new Map<InferenceProcess, Release>();
  private closed = false;
  private drained: (() => void) | undefined;

  constructor(
    size: number,
    private readonly spawn: () => InferenceProcess,
    first: InferenceProcess,
  ) {
    this.slots = new Semaphore({ capacity: size });
    this.idle.push(first);
  }

  /** A process for one job; `cancel` withdraws a request that is still waiting (it rejects). */
  acquire(): { worker: Promise<InferenceProcess>; cancel(): void } {
    const withdraw = new AbortController();
    const worker = this.slots.acquire({ signal: withdraw.signal }).then((release) => {
      const granted = this.idle.pop() ?? this.spawn();
      this.busy.set(granted, release);
      return granted;
    });
    // A withdrawn request rejects (with an AbortError) for a caller that already gave up.
    return { worker, cancel: () => withdraw.abort() };
  }

  /** Returns a process after its job; a dead one is replaced by a fresh one for the next caller. */
  release(worker: InferenceProcess): void {
    this.idle.push(worker.alive || this.closed ? worker : this.spawn());
    const release = this.busy.get(worker);
    this.busy.delete(worker);
    release?.();
    if (this.closed && this.slots.held === 0) this.drained?.();
  }

  /** Refuses waiting calls, lets inferences in flight finish, then stops every process. */
  async close(): Promise<void> {
    this.closed = true;
    this.slots.close(closedError);
    if (this.slots.held > 0) await new Promise<void>((resolve) => (this.drained = resolve));
    const workers = this.idle.splice(0);
    await Promise.all(
      workers.map(async (worker) => {
        await worker.ready.catch(() => {});
        await worker.terminate();
      }),
    );
  }
}

export function closedError(): ImagePipelineError {
  return new ImagePipelineError(ErrorCodes.MODEL_UNAVAILABLE, "The background remover is closed.");
}
