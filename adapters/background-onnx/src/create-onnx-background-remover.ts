import { type ChildProcess, fork } from "node:child_process";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { availableParallelism, tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import {
  type CutoutPixels,
  cutoutPng,
  decodeCutoutPixels,
  openRequestImage,
  type RequestImage,
} from "@pixport/background-sharp";
import type { BackgroundRemovalOptions, BackgroundRemovalRequest, BackgroundRemover } from "@pixport/core";
import { ErrorCodes, ImagePipelineError, parseOptions } from "@pixport/core";
import type { InferenceSession } from "onnxruntime-node";
import sharp from "sharp";
import { z } from "zod";
import { MODEL_PRESETS, type OnnxModelFamily, type OnnxModelPreset } from "./presets.js";

/** Options of {@link createOnnxBackgroundRemover}. Only `model` is required. */
export interface OnnxBackgroundRemoverOptions extends Partial<OnnxModelPreset> {
  /**
   * The segmentation model: a path to an `.onnx` file or its bytes. pixport ships no model and
   * never downloads one; check the model's licence before you deploy it.
   */
  model: string | Uint8Array;
  /** Model family whose pre- and post-processing is used; any field can be overridden. @default "isnet" */
  family?: OnnxModelFamily;
  /** Input to feed. @default the model's first input */
  inputName?: string;
  /** Output holding the mask. @default the model's first output */
  outputName?: string;
  /** onnxruntime intra-op threads per inference. @default min(4, available cores) */
  threads?: number;
  /**
   * Inferences run at once, each in its own process with its own copy of the model (IS-Net: about
   * 0.85 GB at its peak); further calls wait in a first-in, first-out queue. One inference already
   * uses `threads` cores, so more than 1 rarely helps. @default 1
   */
  concurrency?: number;
  /**
   * Deadline (ms) of one call, queueing included; past it the call rejects with `MODEL_TIMEOUT`.
   * onnxruntime-node cannot interrupt a running inference: it finishes in the background and keeps
   * its slot, so the work in flight stays bounded. @default 30_000
   */
  timeoutMs?: number;
  /** Decoder pixel limit (the deployment's `maxInputPixels`). @default 100_000_000 */
  maxInputPixels?: number;
  /**
   * onnxruntime's CPU memory arena. Inference runs in a child process whose malloc asks for
   * transparent huge pages (glibc 2.35 or later); there, without the arena, every inference maps
   * its activations afresh at the arena's speed and gives them back after: measured on IS-Net at
   * 1024 x 1024 on 2 cores, 1.3 s per inference and a 0.94 GB peak, against 1.5 s and 1.13 GB with
   * the arena (which keeps its memory reserved between calls). Without huge pages (other C
   * libraries), arena-less inference faults its memory in page by page and takes twice as long, so
   * the arena is on there. @default false with glibc 2.35 or later (unless `GLIBC_TUNABLES` sets
   * `glibc.malloc.hugetlb=0`), else true
   */
  memoryArena?: boolean;
  /**
   * Probabilities within `alphaClip` of 0 or 1 become fully transparent or fully opaque, the rest
   * is stretched linearly: a subject the model is 99 % sure of is opaque (alpha 255, not 253), a
   * background it is 1 % unsure of is clear, soft edges stay soft. 0 keeps the map as it is.
   * @default 0.02
   */
  alphaClip?: number;
}

const rgb = z.tuple([z.number(), z.number(), z.number()]).readonly();

/**
 * The options' shape, checked before anything is loaded (unknown keys are refused): a bad option
 * is `INVALID_CONFIGURATION` naming it. What depends on the model (its input and output names,
 * the input size it accepts) is checked once the model is loaded.
 */
export const onnxBackgroundRemoverOptionsSchema = z
  .object({
    model: z.union([z.string().min(1), z.instanceof(Uint8Array)], {
      message: "must be a path to an .onnx file or its bytes",
    }),
    family: z.enum(Object.keys(MODEL_PRESETS) as [OnnxModelFamily, ...OnnxModelFamily[]]).optional(),
    inputName: z.string().min(1).optional(),
    outputName: z.string().min(1).optional(),
    threads: z.number().int().min(1).max(256).optional(),
    concurrency: z.number().int().min(1).max(64).optional(),
    timeoutMs: z.number().positive().optional(),
    maxInputPixels: z.number().int().positive().optional(),
    memoryArena: z.boolean().optional(),
    alphaClip: z.number().min(0).lt(0.5).optional(),
    inputWidth: z.number().int().min(8).max(4096).optional(),
    inputHeight: z.number().int().min(8).max(4096).optional(),
    mean: rgb.optional(),
    std: rgb
      .refine((values) => values.every((value) => value > 0), "must hold 3 positive numbers")
      .optional(),
    output: z.enum(["probability", "logits"]).optional(),
    normalize: z.enum(["minmax", "none"]).optional(),
  })
  .strict();

/** A {@link BackgroundRemover} holding a loaded model; `close()` releases it. */
export interface OnnxBackgroundRemover extends BackgroundRemover {
  /** The resolved model settings (family defaults merged with the options and the model's shapes). */
  readonly settings: Readonly<ResolvedSettings>;
  close(): Promise<void>;
}

interface ResolvedSettings extends OnnxModelPreset {
  alphaClip: number;
  inputName: string;
  outputName: string;
  layout: "nchw" | "nhwc";
}

function invalidConfig(message: string, cause?: unknown): ImagePipelineError {
  return new ImagePipelineError(
    ErrorCodes.INVALID_CONFIGURATION,
    message,
    cause === undefined ? {} : { cause },
  );
}

/** Resolves the input name, layout and size from the model's metadata and the options. */
function resolveSettings(
  session: { inputNames: string[]; outputNames: string[]; inputs: InputInfo[] },
  options: OnnxBackgroundRemoverOptions,
): ResolvedSettings {
  const preset = MODEL_PRESETS[options.family ?? "isnet"];
  if (preset === undefined) throw invalidConfig(`Unknown model family "${options.family}".`);
  const inputName = options.inputName ?? session.inputNames[0];
  const outputName = options.outputName ?? session.outputNames[0];
  if (inputName === undefined || !session.inputNames.includes(inputName)) {
    throw invalidConfig(`The model has no input "${inputName}" (inputs: ${session.inputNames.join(", ")}).`);
  }
  if (outputName === undefined || !session.outputNames.includes(outputName)) {
    throw invalidConfig(
      `The model has no output "${outputName}" (outputs: ${session.outputNames.join(", ")}).`,
    );
  }
  const input = session.inputs[session.inputNames.indexOf(inputName)];
  if (input === undefined || !input.isTensor || input.type !== "float32") {
    throw invalidConfig(`The model's input "${inputName}" must be a float32 tensor.`);
  }
  const shape = input.shape;
  if (shape.length !== 4) {
    throw invalidConfig(
      `The model's input "${inputName}" must have 4 dimensions (N, C, H, W), not ${shape.length}.`,
    );
  }
  // A channel dimension of 3 tells the layout; with both symbolic, NCHW (every known family).
  const layout = shape[3] === 3 && shape[1] !== 3 ? "nhwc" : "nchw";
  const channels = layout === "nchw" ? shape[1] : shape[3];
  if (typeof channels === "number" && channels !== 3) {
    throw invalidConfig(`The model's input "${inputName}" must take 3 (RGB) channels, not ${channels}.`);
  }
  const [heightDim, widthDim] = layout === "nchw" ? [shape[2], shape[3]] : [shape[1], shape[2]];
  const fixed = (dim: number | string | undefined) => (typeof dim === "number" && dim > 0 ? dim : undefined);
  const inputWidth = options.inputWidth ?? fixed(widthDim) ?? preset.inputWidth;
  const inputHeight = options.inputHeight ?? fixed(heightDim) ?? preset.inputHeight;
  for (const [name, value] of [
    ["inputWidth", inputWidth],
    ["inputHeight", inputHeight],
  ] as const) {
    if (!Number.isInteger(value) || value < 8 || value > 4096) {
      throw invalidConfig(`${name} must be an integer from 8 to 4096.`);
    }
  }
  const alphaClip = options.alphaClip ?? 0.02;
  if (!(alphaClip >= 0 && alphaClip < 0.5))
    throw invalidConfig("alphaClip must be at least 0 and below 0.5.");
  const mean = options.mean ?? preset.mean;
  const std = options.std ?? preset.std;
  if (mean.length !== 3 || std.length !== 3 || std.some((value) => !(value > 0))) {
    throw invalidConfig("mean and std must each hold 3 numbers, std all positive.");
  }
  return {
    inputName,
    outputName,
    layout,
    inputWidth,
    inputHeight,
    mean,
    std,
    output: options.output ?? preset.output,
    normalize: options.normalize ?? preset.normalize,
    alphaClip,
  };
}

/** Input metadata as the inference process reports it. */
interface InputInfo {
  name: string;
  isTensor: boolean;
  type: string | undefined;
  shape: Array<number | string>;
}

type ProcessReply =
  | { type: "ready"; inputNames: string[]; outputNames: string[]; inputs: InputInfo[] }
  | { type: "failed"; message: string }
  | { id: number; mask: Uint8Array; width: number; height: number }
  | { id: number; error: { code: string; message: string } };

interface MaskMap {
  mask: Uint8Array;
  width: number;
  height: number;
}

const PROCESS_PATH = fileURLToPath(new URL("./inference-process.cjs", import.meta.url));
const RUNTIME_PATH = createRequire(import.meta.url).resolve("onnxruntime-node");
const TEMP_PREFIX = "pixport-onnx-";

/**
 * Images up to this many pixels get their mask scaled to full size by the inference process's
 * post-processing graph (onnxruntime's bilinear Resize, before rounding: about 10 ms for 3
 * megapixels on 2 cores, against about 35 ms for libvips' one-band resize in the host). It runs
 * after the model has given back its activations, so up to here (about 9 bytes per pixel: 0.3 GB)
 * it stays below the process's own peak; larger images are scaled by libvips in the host, which
 * streams.
 */
const PROCESS_RESIZE_MAX_PIXELS = 32_000_000;

/**
 * The inference processes' malloc asks for transparent huge pages: glibc 2.35 or later, and the
 * host's environment does not turn it off (`glibc.malloc.hugetlb=0` in `GLIBC_TUNABLES`).
 */
function hugePageMalloc(): boolean {
  if (/glibc\.malloc\.hugetlb=0/.test(process.env.GLIBC_TUNABLES ?? "")) return false;
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)
    ?.header;
  const [major, minor] = (header?.glibcVersionRuntime ?? "0.0").split(".").map(Number);
  return (major ?? 0) > 2 || ((major ?? 0) === 2 && (minor ?? 0) >= 35);
}

/**
 * glibc tunables of an inference process, each unless the host's `GLIBC_TUNABLES` sets it:
 * - `glibc.malloc.hugetlb=1`: malloc asks for transparent huge pages (onnxruntime runs without its
 *   arena at the arena's speed);
 * - `glibc.malloc.mmap_threshold=131072`: every buffer of 128 KiB or more is mapped for itself and
 *   unmapped when freed. glibc's default threshold rises to the size of each mapped buffer freed
 *   (up to 32 MiB), after which the activations of one layer come from the heap and are kept there,
 *   fragmented, beside the next layer's: IS-Net's process peaked at 828-893 MiB at 1024 x 1024
 *   and 2048 x 1536 with the default, 718-723 MiB with the fixed threshold, at the same speed
 *   within the runs' noise (a freshly mapped buffer is zeroed by the kernel on each inference:
 *   about 550 MB, a few percent of a second-long run; bench/background.mjs, BENCHMARKS.md). A host
 *   that sets `glibc.malloc.mmap_threshold` itself chooses for its inference processes too.
 */
export const INFERENCE_TUNABLES = ["glibc.malloc.hugetlb=1", "glibc.malloc.mmap_threshold=131072"];

/** The environment of an inference process: the host's, with {@link INFERENCE_TUNABLES} added. */
export function inferenceEnv(host: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const tunables = host.GLIBC_TUNABLES ?? "";
  const added = INFERENCE_TUNABLES.filter(
    (tunable) => !tunables.includes(tunable.slice(0, tunable.indexOf("=") + 1)),
  );
  if (added.length === 0) return host;
  return { ...host, GLIBC_TUNABLES: [tunables, ...added].filter((part) => part !== "").join(":") };
}

function forkInference(): ChildProcess {
  return fork(PROCESS_PATH, [], {
    serialization: "advanced",
    env: inferenceEnv(),
    // No inspector or loader flags of the host (a debugger port would clash); stdout unused.
    execArgv: [],
    stdio: ["ignore", "ignore", "inherit", "ipc"],
  });
}

/** Replies on an inference process's channel that end its start, or why it ended. */
function firstReply<T>(child: ChildProcess, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null, signal: string | null) =>
      reject(new Error(`The ${what} process exited (${signal ?? `code ${code}`}).`));
    child.once("message", (reply: T) => {
      child.off("exit", onExit);
      resolve(reply);
    });
    child.once("error", reject);
    child.once("exit", onExit);
  });
}

/**
 * Widens float16 tensors and optimises the graph in a short-lived process, writing the model the
 * inference processes load: the optimiser's transient memory (about 0.25 GB for IS-Net) never
 * reaches them. Answers the prepared model's path inside a new private temporary directory.
 */
async function prepareModel(
  model: string | Uint8Array,
  sessionOptions: InferenceSession.SessionOptions,
): Promise<{ directory: string; file: string }> {
  await sweepTemporaryDirectories();
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

/** Removes prepared models left by processes that no longer run (a crash skips `close()`). */
async function sweepTemporaryDirectories(): Promise<void> {
  const entries = await readdir(tmpdir()).catch(() => [] as string[]);
  await Promise.all(
    entries.map(async (name) => {
      if (!name.startsWith(TEMP_PREFIX)) return;
      const pid = Number(name.slice(TEMP_PREFIX.length).split("-")[0]);
      if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return;
      try {
        process.kill(pid, 0);
        return; // still running
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ESRCH") return;
      }
      await rm(path.join(tmpdir(), name), { recursive: true, force: true });
    }),
  );
}

/** One inference process holding one session. */
class InferenceProcess {
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
 * calls wait in a first-in, first-out queue. A process that died is replaced on the next call.
 */
class ProcessPool {
  private readonly idle: InferenceProcess[] = [];
  private readonly waiting: Array<{ grant(worker: InferenceProcess): void; refuse(error: Error): void }> = [];
  private count = 1;
  private busy = 0;
  private closed = false;
  private drained: (() => void) | undefined;

  constructor(
    private readonly size: number,
    private readonly spawn: () => InferenceProcess,
    first: InferenceProcess,
  ) {
    this.idle.push(first);
  }

  /** A process for one job; `cancel` withdraws a request that is still waiting. */
  acquire(): { worker: Promise<InferenceProcess>; cancel(): void } {
    let entry: (typeof this.waiting)[number] | undefined;
    const worker = new Promise<InferenceProcess>((resolve, reject) => {
      entry = {
        grant: (granted) => {
          this.busy += 1;
          resolve(granted);
        },
        refuse: reject,
      };
    });
    const request = entry!;
    if (this.closed) request.refuse(closedError());
    else if (this.idle.length > 0) request.grant(this.idle.pop()!);
    else if (this.count < this.size) {
      this.count += 1;
      request.grant(this.spawn());
    } else this.waiting.push(request);
    return {
      worker,
      cancel: () => {
        const index = this.waiting.indexOf(request);
        if (index >= 0) this.waiting.splice(index, 1);
      },
    };
  }

  /** Returns a process after its job; a dead one is replaced by a fresh one for the next caller. */
  release(worker: InferenceProcess): void {
    this.busy -= 1;
    const next = worker.alive || this.closed ? worker : this.spawn();
    const waiter = this.closed ? undefined : this.waiting.shift();
    if (waiter !== undefined) waiter.grant(next);
    else this.idle.push(next);
    if (this.closed && this.busy === 0) this.drained?.();
  }

  /** Refuses waiting calls, lets inferences in flight finish, then stops every process. */
  async close(): Promise<void> {
    this.closed = true;
    for (const waiter of this.waiting.splice(0)) waiter.refuse(closedError());
    if (this.busy > 0) await new Promise<void>((resolve) => (this.drained = resolve));
    const workers = this.idle.splice(0);
    await Promise.all(
      workers.map(async (worker) => {
        await worker.ready.catch(() => {});
        await worker.terminate();
      }),
    );
  }
}

function closedError(): ImagePipelineError {
  return new ImagePipelineError(ErrorCodes.MODEL_UNAVAILABLE, "The background remover is closed.");
}

/**
 * A {@link BackgroundRemover} running a user-supplied ONNX segmentation model (U²-Net, IS-Net,
 * BiRefNet or anything with their input and output shapes) on onnxruntime-node, on the CPU.
 *
 * Loads and checks the model once: a missing file, an unreadable model or shapes that do not fit
 * reject with `INVALID_CONFIGURATION`, so a deployment fails at start, not on the first request.
 *
 * Inference runs in child processes (one session each, `concurrency` of them, forked from this
 * package's `inference-process.cjs`): onnxruntime-node's `run()` holds its thread for the whole
 * inference and cannot be interrupted, and a process can be stopped for real. A call past
 * `timeoutMs`, or whose signal aborts, rejects at once (`MODEL_TIMEOUT`, or the signal's reason)
 * and its inference, if it started, is killed with its process, which is replaced for the next
 * call (loading a prepared model takes about a second). `close()` refuses new calls, waits for
 * the inferences in flight, then stops the processes and removes the prepared model.
 *
 * At creation the model is prepared once in a short-lived process: float16 tensors are widened to
 * float32 (onnxruntime's CPU provider has no float16 kernels for most layers and would cast around
 * each one) and the graph is optimised at onnxruntime's highest level for this CPU, then saved in
 * a private temporary directory that the inference processes load. Session options, measured on
 * IS-Net (fp16 weights) at 1024 x 1024 on 2 cores, as `node bench/background.mjs` prints them:
 * `intraOpNumThreads` = `threads`, one inter-op thread, the memory pattern off (with the arena it
 * raised the peak to 2.3 GB at the same speed), the arena as `memoryArena` says.
 *
 * Per call: the image is decoded with EXIF orientation, flattened on white if it has alpha,
 * stretched to the model's input size (the families are trained on stretched, not letterboxed,
 * inputs) and normalised; the output map is turned into probabilities (sigmoid for logits,
 * optional per-image stretch), scaled back to the image's size with a bilinear kernel (by the
 * inference process's post-processing graph, before rounding, for images up to 32 megapixels; by
 * libvips in the host, which streams, above that) and used as the alpha channel of the original
 * pixels (combined with any existing alpha), as a PNG. The pre- and post-processing graphs run in
 * the inference process on one thread each.
 *
 * @example
 * ```ts
 * const remover = await createOnnxBackgroundRemover({ model: "/models/isnet-general-use.onnx", family: "isnet" });
 * const pipeline = createImagePipeline({ ...deps, backgroundRemover: remover });
 * ```
 */
export async function createOnnxBackgroundRemover(
  options: OnnxBackgroundRemoverOptions,
): Promise<OnnxBackgroundRemover> {
  parseOptions(onnxBackgroundRemoverOptionsSchema, options, "createOnnxBackgroundRemover");
  const threads = options.threads ?? Math.max(1, Math.min(4, availableParallelism()));
  const timeoutMs = options.timeoutMs ?? 30_000;
  const maxInputPixels = options.maxInputPixels ?? 100_000_000;
  const concurrency = options.concurrency ?? 1;
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw invalidConfig("concurrency must be a positive integer.");
  }
  if (!Number.isInteger(threads) || threads < 1) throw invalidConfig("threads must be a positive integer.");
  if (!(timeoutMs > 0)) throw invalidConfig("timeoutMs must be positive.");
  const sessionOptions: InferenceSession.SessionOptions = {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionProviders: ["cpu"],
    enableCpuMemArena: options.memoryArena ?? !hugePageMalloc(),
    enableMemPattern: false,
    // Warnings only (onnxruntime warns that an optimised model is specific to this CPU).
    logSeverityLevel: 3,
  };
  const source = typeof options.model === "string" ? `"${options.model}"` : "the given bytes";
  let prepared: { directory: string; file: string };
  try {
    prepared = await prepareModel(options.model, sessionOptions);
  } catch (error) {
    throw invalidConfig(`Could not load the ONNX model from ${source}: ${(error as Error).message}`, error);
  }
  // The prepared model is already optimised for this CPU.
  const loadOptions = { ...sessionOptions, graphOptimizationLevel: "disabled" } as const;
  const spawn = () => new InferenceProcess(prepared.file, loadOptions);
  const removePrepared = () => rm(prepared.directory, { recursive: true, force: true });
  const first = spawn();
  let metadata: Awaited<InferenceProcess["ready"]>;
  try {
    metadata = await first.ready;
  } catch (error) {
    await first.terminate();
    await removePrepared();
    throw invalidConfig(`Could not load the ONNX model from ${source}: ${(error as Error).message}`, error);
  }
  let settings: ResolvedSettings;
  try {
    settings = resolveSettings(metadata, options);
  } catch (error) {
    await first.terminate();
    await removePrepared();
    throw error;
  }
  const pool = new ProcessPool(concurrency, spawn, first);
  let closed = false;

  /** Opens and checks the image, and makes the model's input: RGB bytes of the input size. */
  async function prepare(request: BackgroundRemovalRequest) {
    const image = await openRequestImage(request, maxInputPixels);
    const rgb = await image
      .source()
      .flatten({ background: "#ffffff" })
      .toColourspace("srgb")
      .resize(settings.inputWidth, settings.inputHeight, { fit: "fill", kernel: "lanczos3" })
      .removeAlpha()
      .raw()
      .toBuffer();
    return { image, rgb: new Uint8Array(rgb) };
  }

  /**
   * The size the inference process scales the mask to: the image's, up to
   * {@link PROCESS_RESIZE_MAX_PIXELS}; beyond it the mask comes back at the model's size and libvips
   * scales it here (see {@link compose}).
   */
  function maskTarget(image: RequestImage) {
    return image.width * image.height <= PROCESS_RESIZE_MAX_PIXELS
      ? { width: image.width, height: image.height }
      : undefined;
  }

  /** The mask at the image's size (scaled here when the process did not) joined as alpha, as a PNG. */
  async function compose(
    image: RequestImage,
    map: MaskMap,
    pixels: Promise<CutoutPixels>,
  ): Promise<Uint8Array> {
    const alpha =
      map.width === image.width && map.height === image.height
        ? Buffer.from(map.mask.buffer, map.mask.byteOffset, map.mask.byteLength)
        : await sharp(map.mask, { raw: { width: map.width, height: map.height, channels: 1 } })
            .resize(image.width, image.height, { fit: "fill", kernel: "linear" })
            .extractChannel(0)
            .raw()
            .toBuffer();
    return cutoutPng(image, alpha, pixels);
  }

  return {
    name: `onnx-${options.family ?? "isnet"}`,
    settings,
    async remove(request: BackgroundRemovalRequest, callOptions: BackgroundRemovalOptions = {}) {
      const { signal } = callOptions;
      if (closed) throw closedError();
      signal?.throwIfAborted();
      let slot: ReturnType<ProcessPool["acquire"]> | undefined;
      let timer: NodeJS.Timeout | undefined;
      let onAbort: (() => void) | undefined;
      // Set once the caller stopped waiting (deadline or abort): no inference starts after that,
      // and one that is running is killed with its process.
      let gaveUp = false;
      let running: InferenceProcess | undefined;
      const giveUp = () => {
        gaveUp = true;
        slot?.cancel();
        void running?.terminate();
      };
      const stop = new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => {
          giveUp();
          reject(
            new ImagePipelineError(
              ErrorCodes.MODEL_TIMEOUT,
              `Background removal took longer than ${timeoutMs} ms.`,
              {
                retryAfterSeconds: Math.ceil(timeoutMs / 1000),
              },
            ),
          );
        }, timeoutMs);
        onAbort = () => {
          giveUp();
          reject(signal?.reason);
        };
        signal?.addEventListener("abort", onAbort, { once: true });
      });
      stop.catch(() => {});
      const work = (async () => {
        const prepared = await prepare(request);
        if (gaveUp) return new Uint8Array();
        slot = pool.acquire();
        const worker = await slot.worker;
        let map: MaskMap;
        let pixels: Promise<CutoutPixels> | undefined;
        try {
          if (closed) throw closedError();
          // The caller already has its MODEL_TIMEOUT or abort: this value is never seen.
          if (gaveUp) return new Uint8Array();
          await worker.ready.catch((error: Error) => {
            throw new ImagePipelineError(
              ErrorCodes.MODEL_UNAVAILABLE,
              `The model did not load: ${error.message}`,
            );
          });
          running = worker;
          // The full-size pixels the mask is joined to are decoded while the model runs.
          pixels = decodeCutoutPixels(prepared.image);
          pixels.catch(() => {});
          map = await worker.run(prepared.rgb, settings, maskTarget(prepared.image));
        } finally {
          running = undefined;
          pool.release(worker);
        }
        signal?.throwIfAborted();
        return compose(prepared.image, map, pixels ?? decodeCutoutPixels(prepared.image));
      })();
      work.catch(() => {});
      try {
        return await Promise.race([work, stop]);
      } finally {
        clearTimeout(timer);
        if (onAbort !== undefined) signal?.removeEventListener("abort", onAbort);
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      await pool.close();
      await removePrepared();
    },
  };
}
