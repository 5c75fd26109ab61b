import { ErrorCodes, ImagePipelineError, isImagePipelineError } from "../errors.js";
import type { ImageFormat } from "../image.js";
import { LruMap } from "../lru.js";
import { createWorkGate, type WorkGate } from "../policies/work-gate.js";
import type { OriginAnswer, OriginSource, OriginValidators } from "../ports/origin-source.js";
import type { VariantCache } from "../ports/variant-cache.js";
import { probeInput } from "./codec-runner.js";
import type { PipelineContext } from "./context.js";
import type { ResolvedOriginSettings } from "./origin-url.js";
import { sha256Hex } from "./variant-request.js";

/*
 * Originals of origin images: fetched once per node at a time, kept in a bounded cache on the
 * deployment's store (shared by every node on S3), used until their freshness ends, then
 * revalidated with the origin's validators (a 304 keeps the bytes, no refetch).
 */

/** What delivery needs of an original to plan a variant and key it: everything but its bytes. */
export interface OriginalHeader {
  /** Hex digest of the bytes: changes exactly when the original changes. */
  version: string;
  format: ImageFormat;
  width: number;
  height: number;
  frames: number;
  /** Bytes of the original. */
  size: number;
  /** Seconds the original stays fresh from now (the variants' `max-age`). */
  freshSeconds: number;
}

/** An original with its bytes. */
export interface Original extends OriginalHeader {
  data: Uint8Array;
}

/** The header of a cached original, framed before its bytes in one blob (one write, never torn). */
interface StoredMeta {
  version: string;
  validators: OriginValidators;
  format: ImageFormat;
  width: number;
  height: number;
  frames: number;
  /** Unix ms until which it is fresh. */
  freshUntil: number;
}

/** One configured origin: its source and its settings. */
export interface ConfiguredOrigin {
  source: OriginSource;
  settings: ResolvedOriginSettings;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function frame(meta: StoredMeta, data: Uint8Array): Uint8Array {
  const head = encoder.encode(JSON.stringify(meta));
  const out = new Uint8Array(4 + head.byteLength + data.byteLength);
  new DataView(out.buffer).setUint32(0, head.byteLength);
  out.set(head, 4);
  out.set(data, 4 + head.byteLength);
  return out;
}

function unframe(blob: Uint8Array): { meta: StoredMeta; data: Uint8Array } | null {
  try {
    const length = new DataView(blob.buffer, blob.byteOffset, blob.byteLength).getUint32(0);
    const meta = JSON.parse(decoder.decode(blob.subarray(4, 4 + length))) as StoredMeta;
    if (typeof meta.version !== "string" || typeof meta.freshUntil !== "number") return null;
    return { meta, data: blob.subarray(4 + length) };
  } catch {
    return null;
  }
}

/** Runs `task` with the origin's deadline: past it, `ORIGIN_TIMEOUT` (and the fetch is aborted). */
async function withDeadline<T>(
  timeoutMs: number,
  outer: AbortSignal | undefined,
  task: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  const timeout = new ImagePipelineError(
    ErrorCodes.ORIGIN_TIMEOUT,
    `The origin did not answer within ${timeoutMs / 1000} s.`,
  );
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort(timeout);
      reject(timeout);
    }, timeoutMs);
  });
  const onAbort = () => controller.abort(outer?.reason);
  outer?.addEventListener("abort", onAbort, { once: true });
  try {
    return await Promise.race([task(controller.signal), expired]);
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener("abort", onAbort);
  }
}

/** Any failure of a source that is not one of the port's codes is the origin's (502), logged. */
function originFailure(error: unknown): Error {
  if (isImagePipelineError(error)) {
    if (error.code === ErrorCodes.INVALID_IMAGE) {
      return new ImagePipelineError(
        ErrorCodes.ORIGIN_ERROR,
        "The origin's object is not an image pixport reads.",
        {
          cause: error,
        },
      );
    }
    return error;
  }
  return new ImagePipelineError(ErrorCodes.ORIGIN_ERROR, "The origin could not be read.", { cause: error });
}

/** What fetching an original works with: the pipeline's context, the cache, per-origin fetch gates. */
interface OriginalsState {
  context: PipelineContext;
  originals: VariantCache;
  gates: ReadonlyMap<string, WorkGate>;
  /** Freshness confirmed by a revalidation on this node (the stored blob keeps its first one). */
  confirmed: Map<string, number>;
}

function toOriginal(
  context: PipelineContext,
  meta: StoredMeta,
  data: Uint8Array,
  freshUntil: number,
): Original {
  return {
    data,
    version: meta.version,
    format: meta.format,
    width: meta.width,
    height: meta.height,
    frames: meta.frames,
    size: data.byteLength,
    freshSeconds: freshSecondsOf(context, freshUntil),
  };
}

function freshSecondsOf(context: PipelineContext, freshUntil: number): number {
  return Math.max(0, Math.floor((freshUntil - context.clock.now().getTime()) / 1000));
}

/**
 * One request to the origin in a slot of its gate, under its deadline; failures mapped. No
 * request's signal: the fetch is shared by every miss waiting on it.
 */
function askOrigin(
  state: OriginalsState,
  name: string,
  origin: ConfiguredOrigin,
  segments: readonly string[],
  held: { meta: StoredMeta } | null,
): Promise<OriginAnswer> {
  return state.gates
    .get(name)!
    .run(
      () =>
        withDeadline(origin.settings.timeoutMs, undefined, (deadline) =>
          origin.source.get({
            segments,
            validators: held?.meta.validators,
            maxBytes: state.context.limits.maxUploadBytes,
            signal: deadline,
          }),
        ),
      undefined,
    )
    .catch((error: unknown) => {
      throw originFailure(error);
    });
}

/** Fetches or revalidates the original at `segments`, keeping new bytes once their header passes. */
async function fetchOriginal(
  state: OriginalsState,
  name: string,
  origin: ConfiguredOrigin,
  segments: readonly string[],
  key: string,
  held: { meta: StoredMeta; data: Uint8Array } | null,
): Promise<Original> {
  const { context, confirmed } = state;
  const answer = await askOrigin(state, name, origin, segments, held);
  const now = context.clock.now().getTime();
  if (answer.status === "not-found") {
    throw new ImagePipelineError(
      ErrorCodes.ORIGIN_NOT_FOUND,
      `The origin ${name} has no image at this path.`,
    );
  }
  const freshUntil = now + 1000 * (answer.maxAgeSeconds ?? origin.settings.ttlSeconds);
  if (answer.status === "not-modified") {
    if (held === null) {
      throw new ImagePipelineError(
        ErrorCodes.ORIGIN_ERROR,
        "The origin answered not-modified to a plain request.",
      );
    }
    confirmed.set(key, freshUntil);
    return toOriginal(context, held.meta, held.data, freshUntil);
  }
  const version = (await sha256Hex(answer.data)).slice(0, 32);
  if (held !== null && held.meta.version === version) {
    confirmed.set(key, freshUntil);
    return toOriginal(context, held.meta, held.data, freshUntil);
  }
  // The upload limits, from the header, before any pixel is decoded.
  const header = await probeInput(context.codec, answer.data, context.limits, "path").catch(
    (error: unknown) => {
      throw originFailure(error);
    },
  );
  const meta: StoredMeta = {
    version,
    validators: answer.validators,
    format: header.format,
    width: header.width,
    height: header.height,
    frames: header.frames,
    freshUntil,
  };
  await state.originals.put(`o/${name}`, key, {
    data: frame(meta, answer.data),
    contentType: "application/octet-stream",
  });
  confirmed.delete(key);
  return toOriginal(context, meta, answer.data, freshUntil);
}

/**
 * The originals of every configured origin over one cache (`originals`, a VariantCache whose
 * entries are framed originals keyed by origin and path digest).
 */
export function createOriginals(
  context: PipelineContext,
  origins: ReadonlyMap<string, ConfiguredOrigin>,
  originals: VariantCache,
) {
  const gates = new Map<string, WorkGate>();
  for (const [name, origin] of origins) gates.set(name, createWorkGate(origin.settings.fetches));
  const state: OriginalsState = { context, originals, gates, confirmed: new Map() };
  const inflight = new Map<string, Promise<Original>>();
  // The headers of originals this node read, while fresh: a hit plans and keys its variant from
  // them and reads no bytes (the bytes are read on a miss only). Another node's revalidation is
  // seen once this node's copy is no longer fresh, as the origin's max-age allows.
  const headers = new LruMap<string, { header: Omit<OriginalHeader, "freshSeconds">; freshUntil: number }>({
    maxEntries: 10_000,
  });
  const remember = (pathId: string, original: Original): Original => {
    const { data: _data, freshSeconds, ...header } = original;
    headers.set(pathId, { header, freshUntil: context.clock.now().getTime() + freshSeconds * 1000 });
    return original;
  };

  return {
    /** The header of the original at `segments` when this node read it and it is still fresh. */
    freshHeader(name: string, segments: readonly string[]): OriginalHeader | undefined {
      const known = headers.get(`${name}\n${segments.join("/")}`);
      if (known === undefined || known.freshUntil <= context.clock.now().getTime()) return undefined;
      return { ...known.header, freshSeconds: freshSecondsOf(context, known.freshUntil) };
    },

    /** The original at `segments` of origin `name`: cached and fresh, revalidated, or fetched. */
    async get(name: string, segments: readonly string[], signal?: AbortSignal): Promise<Original> {
      const origin = origins.get(name);
      if (origin === undefined) {
        throw new ImagePipelineError(ErrorCodes.ORIGIN_NOT_FOUND, `No origin is named ${name}.`);
      }
      const pathId = `${name}\n${segments.join("/")}`;
      const key = (await sha256Hex(pathId)).slice(0, 40);
      const stored = await originals.get(`o/${name}`, key);
      const held = stored === null ? null : unframe(stored.data);
      if (held !== null) {
        const freshUntil = Math.max(held.meta.freshUntil, state.confirmed.get(key) ?? 0);
        if (freshUntil > context.clock.now().getTime()) {
          return remember(pathId, toOriginal(context, held.meta, held.data, freshUntil));
        }
      }
      // Concurrent misses of one original fetch it once on this node.
      const flightKey = `${name}/${key}`;
      let flight = inflight.get(flightKey);
      if (flight === undefined) {
        flight = fetchOriginal(state, name, origin, segments, key, held).then((original) =>
          remember(pathId, original),
        );
        inflight.set(flightKey, flight);
        const forget = () => inflight.delete(flightKey);
        flight.then(forget, forget);
      }
      return signal === undefined ? flight : raceAbort(flight, signal);
    },
  };
}

/** The shared flight keeps going for the others when one request goes away. */
function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

export type Originals = ReturnType<typeof createOriginals>;
