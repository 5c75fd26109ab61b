import { describe, expect, it } from "vitest";
import { assertBlobKey, rotatedSize } from "../src/adapter-kit.js";
import { constantTimeEqual, createRandomIdGenerator } from "../src/ids.js";
import { describeUnsupportedImage } from "../src/image.js";
import {
  createBlobStorePublisher,
  createImagePipeline,
  createMemoryBlobStore,
  createMemoryImageRepository,
  createMemoryKeyStore,
  generateApiKey,
  hashApiKey,
  type ImageCodec,
  isImagePipelineError,
  sniffImageFormat,
} from "../src/index.js";
import { billedUnits } from "../src/policies/billing.js";
import { parseColor } from "../src/transforms/color.js";

describe("parseColor", () => {
  it("parses names, short and long hex with alpha, and transparent", () => {
    expect(parseColor("red")).toEqual({ r: 255, g: 0, b: 0, alpha: 1 });
    expect(parseColor(" #0F0 ")).toEqual({ r: 0, g: 255, b: 0, alpha: 1 });
    expect(parseColor("#00000080")).toEqual({ r: 0, g: 0, b: 0, alpha: 0.502 });
    expect(parseColor("#abcd")).toEqual({ r: 0xaa, g: 0xbb, b: 0xcc, alpha: 0.867 });
    expect(parseColor("Transparent")?.alpha).toBe(0);
    expect(parseColor("RebeccaPurple")).toEqual({ r: 0x66, g: 0x33, b: 0x99, alpha: 1 });
  });

  it("refuses anything else", () => {
    for (const value of ["", "#12", "#12345", "#gggggg", "rgb(0,0,0)", "notacolour", "#1234567"]) {
      expect(parseColor(value)).toBeNull();
    }
  });
});

describe("rotatedSize", () => {
  it("swaps sides for quarter turns and grows the box for other angles", () => {
    expect(rotatedSize({ width: 200, height: 100 }, 90)).toEqual({ width: 100, height: 200 });
    expect(rotatedSize({ width: 200, height: 100 }, -270)).toEqual({ width: 100, height: 200 });
    expect(rotatedSize({ width: 200, height: 100 }, 180)).toEqual({ width: 200, height: 100 });
    expect(rotatedSize({ width: 100, height: 100 }, 45)).toEqual({ width: 142, height: 142 });
  });
});

describe("ids and keys", () => {
  it("generates contract-shaped, distinct image ids", () => {
    const ids = createRandomIdGenerator();
    const seen = new Set(Array.from({ length: 500 }, () => ids.imageId()));
    expect(seen.size).toBe(500);
    for (const id of seen) expect(id).toMatch(/^image_[a-z][a-z0-9]{23}$/);
  });

  it("generates prefixed keys and hashes them with SHA-256", async () => {
    expect(generateApiKey("live")).toMatch(/^live_[A-Za-z0-9]{32}$/);
    expect(await hashApiKey("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  });

  it("compares strings without short-circuiting on length", () => {
    expect(constantTimeEqual("abc", "abc")).toBe(true);
    expect(constantTimeEqual("abc", "abd")).toBe(false);
    expect(constantTimeEqual("abc", "abcd")).toBe(false);
    expect(constantTimeEqual("", "")).toBe(true);
  });
});

describe("sniffImageFormat", () => {
  it("recognises every format by magic bytes only, and refuses HEVC-coded HEIC with a reason", () => {
    expect(sniffImageFormat(new Uint8Array([0xff, 0xd8, 0xff, 0xe0]))).toBe("jpeg");
    expect(sniffImageFormat(new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))).toBe("png");
    expect(sniffImageFormat(new TextEncoder().encode("RIFF\0\0\0\0WEBPVP8 "))).toBe("webp");
    expect(sniffImageFormat(new TextEncoder().encode("<svg xmlns=..."))).toBeNull();
    expect(sniffImageFormat(new TextEncoder().encode("GIF89a"))).toBe("gif");
    expect(sniffImageFormat(new TextEncoder().encode("GIF90a"))).toBeNull();
    expect(sniffImageFormat(new Uint8Array([0x49, 0x49, 0x2a, 0, 8, 0, 0, 0]))).toBe("tiff");
    expect(sniffImageFormat(new Uint8Array([0x4d, 0x4d, 0, 0x2a, 0, 0, 0, 8]))).toBe("tiff");
    // BigTIFF (version 43) is not read.
    expect(sniffImageFormat(new Uint8Array([0x49, 0x49, 0x2b, 0, 8, 0, 0, 0]))).toBeNull();
    const box = (type: string, body: number[]) => {
      const bytes = [...new TextEncoder().encode(type), ...body];
      return [0, 0, 0, bytes.length + 4, ...bytes];
    };
    const brands = (major: string) => [
      ...new TextEncoder().encode(major),
      0,
      0,
      0,
      0,
      ...new TextEncoder().encode("mif1"),
    ];
    const heif = (major: string, config: string) =>
      Uint8Array.from([
        ...box("ftyp", brands(major)),
        ...box("meta", [0, 0, 0, 0, ...box(config, [1, 2, 3, 4])]),
      ]);
    expect(sniffImageFormat(heif("avif", "av1C"))).toBe("avif");
    expect(sniffImageFormat(heif("mif1", "av1C")), "HEIF coded with AV1 is read as avif").toBe("avif");
    expect(sniffImageFormat(heif("heic", "hvcC"))).toBeNull();
    expect(describeUnsupportedImage(heif("heic", "hvcC"))).toMatch(
      /HEIC image coded with HEVC.*JPEG or AVIF/,
    );
    expect(describeUnsupportedImage(new TextEncoder().encode("<svg"))).toBeNull();
    expect(sniffImageFormat(new Uint8Array())).toBeNull();
  });
});

describe("assertBlobKey", () => {
  it("accepts generated keys and refuses traversal, absolute and odd keys", () => {
    expect(() => assertBlobKey("images/image_abc.png")).not.toThrow();
    for (const key of [
      "../x",
      "images/../../etc",
      "/etc/passwd",
      "Images/X",
      "",
      "a//b",
      "a/./b",
      "a\\b",
      "a/",
    ]) {
      expect(() => assertBlobKey(key), key).toThrow(TypeError);
    }
  });
});

describe("billing", () => {
  it("bills live keys per the contract and never test keys", () => {
    expect(billedUnits("resizeImage", "live")).toBe(1);
    expect(billedUnits("removeImageBackground", "live")).toBe(2);
    expect(billedUnits("resizeImage", "test")).toBe(0);
    expect(billedUnits("getImage", "live")).toBe(0);
  });
});

/** A codec that must never be reached: these tests stop before any image work. */
const unreachableCodec: ImageCodec = {
  name: "unreachable",
  capabilities: { inputFormats: ["png"], outputFormats: ["png"], steps: [] },
  probe: () => Promise.reject(new Error("probe must not be called")),
  transform: () => Promise.reject(new Error("transform must not be called")),
};

function pipelineWith(codec: ImageCodec = unreachableCodec) {
  const blobStore = createMemoryBlobStore();
  const keys = createMemoryKeyStore();
  return {
    keys,
    pipeline: createImagePipeline({
      codec,
      blobStore,
      images: createMemoryImageRepository(),
      keys,
      publisher: createBlobStorePublisher({
        source: blobStore,
        target: createMemoryBlobStore(),
        publicBaseUrl: "https://cdn.test/",
      }),
    }),
  };
}

describe("pipeline", () => {
  it("authenticates by hash and refuses malformed, unknown and revoked keys alike", async () => {
    const { keys, pipeline } = pipelineWith();
    const key = generateApiKey("test");
    await keys.insert({
      id: "key_1",
      hash: await hashApiKey(key),
      displayPrefix: "test_x",
      kind: "test",
      accountId: "a",
      createdAt: "2026-01-01T00:00:00.000Z",
    });
    const revoked = generateApiKey("live");
    await keys.insert({
      id: "key_2",
      hash: await hashApiKey(revoked),
      displayPrefix: "live_x",
      kind: "live",
      accountId: "a",
      createdAt: "2026-01-01T00:00:00.000Z",
      revoked: true,
    });
    expect(await pipeline.authenticate(key)).toEqual({ accountId: "a", keyKind: "test", keyId: "key_1" });
    for (const bad of [undefined, "", "nope", generateApiKey("test"), revoked]) {
      const error = await pipeline.authenticate(bad).catch((caught: unknown) => caught);
      expect(isImagePipelineError(error) && error.code).toBe("UNAUTHORIZED");
    }
  });

  it("validates before any image work and reports every field", async () => {
    const { pipeline } = pipelineWith();
    const caller = { accountId: "a", keyKind: "live", keyId: "k" } as const;
    // A JavaScript caller (no types): the same 422 as over HTTP.
    const error = await pipeline
      .resizeImage(caller, { imageId: "bad", body: { width: -1, fit: 3 } } as never)
      .catch((caught: unknown) => caught);
    expect(isImagePipelineError(error) && error.issues.map((issue) => issue.path)).toEqual([
      "image_id",
      "width",
      "fit",
    ]);
    const upload = await pipeline
      .uploadImage(caller, { name: undefined, image: new Uint8Array([1, 2, 3]) } as never)
      .catch((caught: unknown) => caught);
    expect(isImagePipelineError(upload) && upload.issues).toEqual([
      { path: "name", message: "is required" },
      { path: "image", message: "must be a jpeg, png or webp file (or avif, gif or tiff)" },
    ]);
  });

  it("refuses invalid options at construction", () => {
    expect(() =>
      createImagePipeline(
        {
          codec: unreachableCodec,
          blobStore: createMemoryBlobStore(),
          images: createMemoryImageRepository(),
          keys: createMemoryKeyStore(),
          publisher: { publish: async () => "", unpublish: async () => {} },
        },
        { encodeQuality: 0 },
      ),
    ).toThrow(/encodeQuality/);
  });
});

describe("createCachingBlobStore", () => {
  const countingBackend = () => {
    const backend = createMemoryBlobStore();
    const reads: string[] = [];
    return {
      backend,
      reads,
      counting: {
        ...backend,
        get: (key: string) => {
          reads.push(key);
          return backend.get(key);
        },
      },
    };
  };

  it("keeps a blob from its second read, and forgets deleted keys", async () => {
    const { createCachingBlobStore } = await import("../src/index.js");
    const { backend, reads, counting } = countingBackend();
    await backend.put("images/a.png", new Uint8Array([1, 2, 3]), { contentType: "image/png" });
    const cached = createCachingBlobStore(counting, { maxBytes: 1024 });
    for (let read = 0; read < 4; read++)
      expect(await cached.get("images/a.png")).toEqual(new Uint8Array([1, 2, 3]));
    expect(reads).toEqual(["images/a.png", "images/a.png"]);
    await cached.delete("images/a.png");
    expect(await cached.get("images/a.png")).toBeNull();
    expect(reads).toHaveLength(3);
  });

  it("does not keep what is written, nor what is read once among the recent keys", async () => {
    const { createCachingBlobStore } = await import("../src/index.js");
    const { reads, counting } = countingBackend();
    const cached = createCachingBlobStore(counting, { maxBytes: 1024, recentKeys: 2 });
    for (const name of ["a", "b", "c"])
      await cached.put(`k/${name}`, new Uint8Array(10), { contentType: "x/y" });
    await cached.get("k/a");
    expect(reads).toEqual(["k/a"]);
    // Two other keys read once push k/a out of the two recent keys: its next read is a first again.
    await cached.get("k/b");
    await cached.get("k/c");
    await cached.get("k/a");
    await cached.get("k/a");
    await cached.get("k/a");
    expect(reads).toEqual(["k/a", "k/b", "k/c", "k/a", "k/a"]);
  });

  it("neither keeps nor refreshes a blob for a background read", async () => {
    const { createCachingBlobStore } = await import("../src/index.js");
    const { reads, counting } = countingBackend();
    const cached = createCachingBlobStore(counting, { maxBytes: 100 });
    for (const name of ["a", "b", "c", "d", "e"])
      await cached.put(`k/${name}`, new Uint8Array(25), { contentType: "x/y" });
    await cached.get("k/e", { background: true });
    await cached.get("k/e"); // a first use: background reads do not count
    expect(reads).toEqual(["k/e", "k/e"]);
    // a..d kept (two reads each: 100 bytes, the bound); a background read of a returns its kept
    // bytes without making it the most recent, so keeping e (read twice in a row) pushes a out.
    for (const name of ["a", "a", "b", "b", "c", "c", "d", "d"]) await cached.get(`k/${name}`);
    reads.length = 0;
    expect(await cached.get("k/a", { background: true })).toHaveLength(25);
    await cached.get("k/e");
    await cached.get("k/e");
    await cached.get("k/b");
    await cached.get("k/a");
    expect(reads).toEqual(["k/e", "k/e", "k/a"]);
  });

  it("does not keep a blob deleted while its keeping read was in flight", async () => {
    const { createCachingBlobStore } = await import("../src/index.js");
    const backend = createMemoryBlobStore();
    await backend.put("k/a", new Uint8Array([7]), { contentType: "x/y" });
    let open!: () => void;
    let gated = false;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const cached = createCachingBlobStore({
      ...backend,
      get: async (key) => {
        const data = await backend.get(key);
        if (gated) await gate;
        return data;
      },
    });
    await cached.get("k/a");
    gated = true;
    const keeping = cached.get("k/a"); // the second read: the one that keeps
    await cached.delete("k/a");
    open();
    expect(await keeping).toEqual(new Uint8Array([7]));
    expect(await cached.get("k/a")).toBeNull();
  });

  it("evicts the least recently used entries past maxBytes and skips oversized blobs", async () => {
    const { createCachingBlobStore } = await import("../src/index.js");
    const { reads, counting } = countingBackend();
    const cached = createCachingBlobStore(counting, { maxBytes: 400 });
    for (const name of ["a", "b", "c", "d", "e", "big"])
      await cached.put(`k/${name}`, new Uint8Array(name === "big" ? 101 : 100), { contentType: "x/y" });
    // Two reads each keep a..e in turn (the fifth pushes a out) and never big (over 400 / 4).
    for (const name of ["a", "b", "c", "d", "e", "big"]) {
      await cached.get(`k/${name}`);
      await cached.get(`k/${name}`);
    }
    reads.length = 0;
    await cached.get("k/big");
    await cached.get("k/a");
    await cached.get("k/e");
    await cached.get("k/b");
    expect(reads).toEqual(["k/big", "k/a"]);
  });
});

describe("misspelt fields", () => {
  it("names every unknown field when the body fails (with a hint when one is close), and ignores extras otherwise", async () => {
    const { pipeline } = pipelineWith();
    const caller = { accountId: "a", keyKind: "live", keyId: "k" } as const;
    const error = await pipeline
      .resizeImage(caller, {
        imageId: "image_aaaaaaaaaaaaaaaaaaaaaaaa",
        body: { widht: 100, sdkVersion: "1.2.0" },
      } as never)
      .catch((caught: unknown) => caught);
    expect(isImagePipelineError(error) && error.issues).toEqual([
      { path: "width", message: "is required when height is not given" },
      { path: "widht", message: "is not a field of this request (did you mean width?)" },
      {
        path: "sdkVersion",
        message:
          "is not a field of this request (it takes width, height, fit, position, letterbox_color, name)",
      },
    ]);
    const modulate = await pipeline
      .modulateImage(caller, { imageId: "image_aaaaaaaaaaaaaaaaaaaaaaaa", body: { brigthness: 10 } } as never)
      .catch((caught: unknown) => caught);
    expect(isImagePipelineError(modulate) && modulate.issues.map((issue) => issue.path)).toContain(
      "brigthness",
    );
  });
});
