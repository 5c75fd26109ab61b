/** Reads the server config's `PIXPORT_*` environment variables (and `PORT`) into a partial config. */

/** Top-level keys and `limits.*` from the environment. */
const ENV: Record<string, { key: string; kind: "number" | "string" | "boolean" | "limit" }> = {
  PIXPORT_PORT: { key: "port", kind: "number" },
  PIXPORT_REDIS_URL: { key: "redisUrl", kind: "string" },
  PIXPORT_HOST: { key: "host", kind: "string" },
  PIXPORT_DATA_DIR: { key: "dataDir", kind: "string" },
  PIXPORT_PUBLIC_BASE_URL: { key: "publicBaseUrl", kind: "string" },
  PIXPORT_PUBLIC_STORAGE_BASE_URL: { key: "publicStorageBaseUrl", kind: "string" },
  PIXPORT_ENCODE_QUALITY: { key: "encodeQuality", kind: "number" },
  PIXPORT_USAGE_HEADER: { key: "usageHeaderName", kind: "string" },
  PIXPORT_MAX_CONCURRENT_UPLOADS: { key: "maxConcurrentUploads", kind: "number" },
  PIXPORT_MAX_CONCURRENT_UPLOADS_PER_ACCOUNT: { key: "maxConcurrentUploadsPerAccount", kind: "number" },
  PIXPORT_MIN_UPLOAD_BYTES_PER_SECOND: { key: "minUploadBytesPerSecond", kind: "number" },
  PIXPORT_UPLOAD_GRACE_MS: { key: "uploadGraceMs", kind: "number" },
  PIXPORT_FAIR_UPLOAD_BYTES_PER_SECOND: { key: "fairUploadBytesPerSecond", kind: "number" },
  PIXPORT_FAIR_UPLOAD_AFTER_MS: { key: "fairUploadAfterMs", kind: "number" },
  PIXPORT_SHUTDOWN_TIMEOUT_MS: { key: "shutdownTimeoutMs", kind: "number" },
  PIXPORT_SHUTDOWN_DELAY_MS: { key: "shutdownDelayMs", kind: "number" },
  PIXPORT_LOG: { key: "log", kind: "boolean" },
  PIXPORT_LOG_LEVEL: { key: "logLevel", kind: "string" },
  PIXPORT_CODEC: { key: "codec", kind: "string" },
  PIXPORT_OCR_ENGINE: { key: "ocrEngine", kind: "string" },
  PIXPORT_BLOB_CACHE_BYTES: { key: "blobCacheBytes", kind: "number" },
  PIXPORT_RELEASE_FREE_MEMORY: { key: "releaseFreeMemory", kind: "boolean" },
  PIXPORT_VIPS_CACHE: { key: "vipsCache", kind: "boolean" },
  PIXPORT_MAX_UPLOAD_BYTES: { key: "maxUploadBytes", kind: "limit" },
  PIXPORT_MAX_INPUT_PIXELS: { key: "maxInputPixels", kind: "limit" },
  PIXPORT_MAX_INPUT_SIDE: { key: "maxInputSide", kind: "limit" },
  PIXPORT_MAX_OUTPUT_SIDE: { key: "maxOutputSide", kind: "limit" },
  PIXPORT_STORAGE: { key: "storage", kind: "string" },
  PIXPORT_METADATA: { key: "metadata", kind: "string" },
};

/** `workQueue.*` from the environment. */
const WORK_QUEUE_ENV: Record<string, string> = {
  PIXPORT_MAX_ACTIVE_JOBS: "maxActive",
  PIXPORT_MAX_QUEUED_JOBS: "maxQueued",
  PIXPORT_MAX_JOB_WAIT_MS: "maxWaitMs",
};

/** `ocr.*` from the environment. */
const OCR_ENV: Record<string, string> = {
  PIXPORT_OCR_WORKERS: "workers",
  PIXPORT_OCR_MAX_QUEUED: "maxQueued",
  PIXPORT_OCR_TIMEOUT_MS: "timeoutMs",
  PIXPORT_OCR_IDLE_MS: "idleMs",
  PIXPORT_OCR_MAX_PAGE_PIXELS: "maxPagePixels",
};

/** `backgroundRemoval.*` from the environment. */
const BACKGROUND_ENV: Record<string, { key: string; kind: "string" | "number" }> = {
  PIXPORT_BACKGROUND_ENGINE: { key: "engine", kind: "string" },
  PIXPORT_BACKGROUND_MODEL: { key: "model", kind: "string" },
  PIXPORT_BACKGROUND_MODEL_FAMILY: { key: "family", kind: "string" },
  PIXPORT_BACKGROUND_THREADS: { key: "threads", kind: "number" },
  PIXPORT_BACKGROUND_TIMEOUT_MS: { key: "timeoutMs", kind: "number" },
};

/** `s3.*` from the environment; AWS credentials are left to the SDK's default chain. */
const S3_ENV: Record<string, { key: string; kind: "string" | "boolean" }> = {
  PIXPORT_S3_BUCKET: { key: "bucket", kind: "string" },
  PIXPORT_S3_REGION: { key: "region", kind: "string" },
  PIXPORT_S3_ENDPOINT: { key: "endpoint", kind: "string" },
  PIXPORT_S3_FORCE_PATH_STYLE: { key: "forcePathStyle", kind: "boolean" },
  PIXPORT_S3_PREFIX: { key: "prefix", kind: "string" },
  PIXPORT_S3_PUBLIC_BUCKET: { key: "publicBucket", kind: "string" },
  PIXPORT_S3_PUBLIC_PREFIX: { key: "publicPrefix", kind: "string" },
  PIXPORT_S3_CHECKSUMS: { key: "checksums", kind: "string" },
};

const OFF = /^(0|false|no|off)$/i;

/** The variables of one table that are set (an empty value counts as unset). */
function setIn<T>(environment: NodeJS.ProcessEnv, table: Record<string, T>): [string, T][] {
  return Object.entries(table)
    .map(([name, entry]) => [environment[name], entry] as const)
    .filter((pair): pair is readonly [string, T] => pair[0] !== undefined && pair[0] !== "")
    .map(([raw, entry]) => [raw, entry]);
}

/** `{key: value}` of one table's variables, or undefined when none is set. */
function section<T>(
  environment: NodeJS.ProcessEnv,
  table: Record<string, T>,
  read: (raw: string, entry: T) => [string, unknown],
): Record<string, unknown> | undefined {
  const entries = setIn(environment, table).map(([raw, entry]) => read(raw, entry));
  return entries.length === 0 ? undefined : Object.fromEntries(entries);
}

const commaList = (raw: string) =>
  raw
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");

/** Top-level values and `limits`. */
function scalars(environment: NodeJS.ProcessEnv): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  const limits: Record<string, unknown> = {};
  for (const [raw, { key, kind }] of setIn(environment, ENV)) {
    // A number that does not parse stays the text the operator wrote, so the error can quote it.
    const value =
      kind === "string"
        ? raw
        : kind === "boolean"
          ? !OFF.test(raw)
          : /^-?\d+(\.\d+)?$/.test(raw.trim())
            ? Number(raw)
            : raw;
    if (kind === "limit") limits[key] = value;
    else result[key] = value;
  }
  if (environment.PORT !== undefined && result.port === undefined) result.port = Number(environment.PORT);
  if (Object.keys(limits).length > 0) result.limits = limits;
  const sourceCacheBytes = environment.PIXPORT_SOURCE_CACHE_BYTES;
  if (sourceCacheBytes !== undefined && sourceCacheBytes !== "") {
    result.sourceCacheBytes = /^(false|off)$/i.test(sourceCacheBytes) ? 0 : Number(sourceCacheBytes);
  }
  const memoryBytes = environment.PIXPORT_MEMORY_BUDGET_BYTES;
  if (memoryBytes !== undefined && memoryBytes !== "") {
    result.memoryBudget = /^(0|false|off)$/i.test(memoryBytes) ? false : { maxBytes: Number(memoryBytes) };
  }
  return result;
}

/** `metrics`, `pages` and `delivery.signingKeys`. */
function serving(environment: NodeJS.ProcessEnv): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  const { PIXPORT_METRICS: enabled, PIXPORT_METRICS_TOKEN: token } = environment;
  if (enabled || token) {
    result.metrics = {
      ...(enabled ? { enabled: !OFF.test(enabled) } : {}),
      ...(token ? { token } : {}),
    };
  }
  const pages = section(
    environment,
    { PIXPORT_PLAYGROUND: "playground", PIXPORT_DOCS: "docs" },
    (raw, key) => [key, !OFF.test(raw)],
  );
  if (pages !== undefined) result.pages = pages;
  const signingKeys = environment.PIXPORT_DELIVERY_SIGNING_KEYS;
  if (signingKeys) result.delivery = { signingKeys: commaList(signingKeys) };
  return result;
}

/** `urlImport`: `PIXPORT_URL_IMPORT`, `PIXPORT_URL_IMPORT_ORIGINS`, `PIXPORT_URL_IMPORT_TIMEOUT_MS`. */
function urlImport(environment: NodeJS.ProcessEnv): Record<string, unknown> | undefined {
  const { PIXPORT_URL_IMPORT: enabled, PIXPORT_URL_IMPORT_ORIGINS: origins } = environment;
  const timeout = environment.PIXPORT_URL_IMPORT_TIMEOUT_MS;
  const result: Record<string, unknown> = {
    ...(enabled ? { enabled: !OFF.test(enabled) } : {}),
    ...(origins !== undefined && origins.trim() !== "" ? { additionalOrigins: commaList(origins) } : {}),
    ...(timeout ? { timeoutMs: Number(timeout) } : {}),
  };
  return Object.keys(result).length === 0 ? undefined : result;
}

/** `backgroundRemoval`: a model path alone selects the ONNX engine. */
function backgroundRemoval(environment: NodeJS.ProcessEnv): Record<string, unknown> | undefined {
  const background = section(environment, BACKGROUND_ENV, (raw, { key, kind }) => [
    key,
    kind === "string" ? raw : Number(raw),
  ]);
  if (background?.model !== undefined && background.engine === undefined) background.engine = "onnx";
  return background;
}

/** The partial config the `PIXPORT_*` variables describe (a section only when one of its variables is set). */
export function fromEnvironment(environment: NodeJS.ProcessEnv): Record<string, unknown> {
  const sections = {
    s3: section(environment, S3_ENV, (raw, { key, kind }) => [key, kind === "string" ? raw : !OFF.test(raw)]),
    workQueue: section(environment, WORK_QUEUE_ENV, (raw, key) => [key, Number(raw)]),
    ocr: section(environment, OCR_ENV, (raw, key) => [key, Number(raw)]),
    urlImport: urlImport(environment),
    backgroundRemoval: backgroundRemoval(environment),
  };
  return {
    ...scalars(environment),
    ...serving(environment),
    ...Object.fromEntries(Object.entries(sections).filter(([, value]) => value !== undefined)),
  };
}
