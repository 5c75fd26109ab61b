import type { ImagePipelineOptions } from "@pixport/core";
import type { HttpHandlerOptions, RequestEvent } from "@pixport/http";
import type { ResolvedPixportContainerConfig } from "../config.js";
import { originSettingsOf } from "../origin-config.js";

/** The options of `createImagePipeline` that the config describes. */
export function pipelineOptionsOf(
  settings: ResolvedPixportContainerConfig,
  testWatermark: ImagePipelineOptions["testWatermark"],
): ImagePipelineOptions {
  return {
    limits: settings.limits,
    encodeQuality: settings.encodeQuality,
    policies: settings.policies,
    ...(testWatermark === undefined ? {} : { testWatermark }),
    urlImport: { ...settings.urlImport, storageBaseUrls: [settings.publicStorageBaseUrl] },
    workQueue: settings.workQueue,
    ...(settings.memoryBudget === false ? {} : { memoryBudget: settings.memoryBudget }),
    modelCircuit: settings.modelCircuit,
    delivery: {
      baseUrl: settings.publicStorageBaseUrl,
      presets: settings.delivery.presets,
      allowUnsigned: settings.delivery.allowUnsigned,
      ...(settings.delivery.defaultQuality === undefined
        ? {}
        : { defaultQuality: settings.delivery.defaultQuality }),
      origins: Object.fromEntries(
        Object.entries(settings.delivery.origins).map(([name, origin]) => [name, originSettingsOf(origin)]),
      ),
    },
    variantCacheBytes: settings.delivery.cacheBytes,
    originalCacheBytes: settings.delivery.originalCacheBytes,
    backgroundFacts: true,
  };
}

/** The options of `createHttpHandler` that the config describes. */
export function httpOptionsOf(
  settings: ResolvedPixportContainerConfig,
  onRequestDone: ((event: RequestEvent) => void) | undefined,
): HttpHandlerOptions {
  return {
    ...(settings.publicBaseUrl === undefined ? {} : { publicBaseUrl: settings.publicBaseUrl }),
    usageHeaderName: settings.usageHeaderName,
    maxConcurrentUploads: settings.maxConcurrentUploads,
    maxConcurrentUploadsPerAccount: settings.maxConcurrentUploadsPerAccount,
    minUploadBytesPerSecond: settings.minUploadBytesPerSecond,
    uploadGraceMs: settings.uploadGraceMs,
    fairUploadBytesPerSecond: settings.fairUploadBytesPerSecond,
    fairUploadAfterMs: settings.fairUploadAfterMs,
    ...(onRequestDone === undefined ? {} : { onRequestDone }),
  };
}
