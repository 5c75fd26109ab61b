import { type ChildProcess, fork } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const PROCESS_PATH = fileURLToPath(new URL("./inference-process.cjs", import.meta.url));
export const RUNTIME_PATH = createRequire(import.meta.url).resolve("onnxruntime-node");

/**
 * The inference processes' malloc asks for transparent huge pages: glibc 2.35 or later, and the
 * host's environment does not turn it off (`glibc.malloc.hugetlb=0` in `GLIBC_TUNABLES`).
 */
export function hugePageMalloc(): boolean {
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

export function forkInference(): ChildProcess {
  return fork(PROCESS_PATH, [], {
    serialization: "advanced",
    env: inferenceEnv(),
    // No inspector or loader flags of the host (a debugger port would clash); stdout unused.
    execArgv: [],
    stdio: ["ignore", "ignore", "inherit", "ipc"],
  });
}

/** Replies on an inference process's channel that end its start, or why it ended. */
export function firstReply<T>(child: ChildProcess, what: string): Promise<T> {
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
