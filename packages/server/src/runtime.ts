import {
  container,
  type DependencyContainer,
  type PixportLifecycle,
  pixportDataPaths,
  provide,
  registerPixport,
  resolve,
  Tokens,
} from "@pixport/container";
import type {
  AccountStore,
  BlobStore,
  Clock,
  ImageFetcher,
  ImagePipeline,
  KeyStore,
  Logger,
  QuotaStore,
} from "@pixport/core";
import type { RequestEvent } from "@pixport/http";
import { containerConfigOf, type ServerConfig } from "./config.js";
import { type Instrumentation, instrumentCodec, instrumentModels } from "./observability.js";

/** Data directory layout of the embedded deployment (`pixportDataPaths` of `@pixport/container`). */
export const dataPaths = pixportDataPaths;

/** Programmatic extras that a config file cannot express. */
export interface RuntimeOptions {
  /**
   * A container whose registrations replace the server's adapters (any token of
   * `@pixport/container`, e.g. `Tokens.BlobStore`); the server registers its own adapters only for
   * tokens it does not hold. @default a child of tsyringe's root container
   */
  container?: DependencyContainer;
  /**
   * The fetcher of create-from-URL. Tests inject one with a test resolver and CA.
   * @default createNodeImageFetcher() (system DNS and roots, public addresses only, port 443)
   */
  imageFetcher?: ImageFetcher;
  /** Time source of the policies and records (tests move it by hand). @default the system clock */
  clock?: Clock;
  /** Called once per answered API request (the server's access log and metrics). */
  onRequestDone?: (event: RequestEvent) => void;
  /** Receives codec job times and model call outcomes (the server's metrics). */
  instrumentation?: () => Instrumentation;
}

/** Everything a deployment runs on, built from its config; shared by `serve` and the CLI. */
export interface PixportRuntime {
  pipeline: ImagePipeline;
  /** The container the deployment was composed in (resolve any port from it). */
  container: DependencyContainer;
  keys: KeyStore;
  accounts: AccountStore;
  /** Monthly usage counters (in the data directory on the embedded defaults, else Redis). */
  quota: QuotaStore;
  /** Where published copies live (served under `/images/`). */
  publicStore: BlobStore;
  /**
   * The engine of the embedded OCR the runtime built (what `ocrEngine: "auto"` chose); undefined
   * when extract-formatted-text goes to an LLM or to models passed in.
   */
  ocrEngine?: "wasm" | "native";
  /** Stops background work, then closes engines, writes the last quota counts, closes connections. */
  close(): Promise<void>;
}

/**
 * Builds the deployment: the config goes to `registerPixport` (`@pixport/container`, the one place
 * that wires adapters), the ports are resolved from the container, and the temp files a crash left
 * are swept once before anything is served.
 *
 * @example
 * ```ts
 * const runtime = await createPixportRuntime(resolveServerConfig({ dataDir: "./data" }), logger);
 * console.log(await runtime.pipeline.usage("default"));
 * await runtime.close();
 * ```
 */
export async function createPixportRuntime(
  config: ServerConfig,
  logger: Logger,
  options: RuntimeOptions = {},
): Promise<PixportRuntime> {
  const scope = options.container ?? container.createChildContainer();
  provide(scope, Tokens.Logger, () => logger);
  const { clock, imageFetcher, instrumentation, onRequestDone } = options;
  if (clock !== undefined) provide(scope, Tokens.Clock, () => clock);
  if (imageFetcher !== undefined) provide(scope, Tokens.Fetcher, () => imageFetcher);
  await registerPixport(scope, containerConfigOf(config), {
    ...(instrumentation === undefined
      ? {}
      : {
          instrumentCodec: (codec) => instrumentCodec(codec, instrumentation),
          instrumentModels: (models) => instrumentModels(models, instrumentation),
        }),
    ...(onRequestDone === undefined ? {} : { onRequestDone }),
  });
  const lifecycle: PixportLifecycle = resolve(scope, Tokens.Lifecycle);
  // Temp files left by a crash are invisible to reads; remove them once at start.
  await lifecycle.sweepTemporaryFiles();
  const ocrEngine = lifecycle.ocrEngine;
  return {
    pipeline: resolve(scope, Tokens.Pipeline),
    container: scope,
    keys: resolve(scope, Tokens.KeyStore),
    accounts: resolve(scope, Tokens.AccountStore),
    quota: resolve(scope, Tokens.QuotaStore),
    publicStore: resolve(scope, Tokens.PublicBlobStore),
    ...(ocrEngine === undefined ? {} : { ocrEngine }),
    close: () => lifecycle.close(),
  };
}
