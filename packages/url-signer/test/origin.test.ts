import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  encodeOriginPath,
  originSignedPath,
  originSrcset,
  originVariantUrl,
  unsignedOriginUrl,
} from "../src/index.js";

const SECRET = "delivery-secret-0123456789";
const base = "https://img.test/";

describe("origin variant URLs: {base}/v/{signature}/o/{origin}/{modifiers}/{path}.{ext}", () => {
  it("signs /o/{origin}/{canonical modifiers}/{path}.{ext} with HMAC-SHA256, base64url (node:crypto's bytes)", async () => {
    const url = await originVariantUrl({
      base,
      secret: SECRET,
      origin: "cms",
      path: "products/shoe.jpg",
      modifiers: ["w_640", "q_70"],
    });
    const signed = "/o/cms/q_70,w_640/products/shoe.jpg.auto";
    const signature = createHmac("sha256", SECRET).update(signed).digest("base64url");
    expect(url).toBe(`https://img.test/v/${signature}${signed}`);
    expect(signature).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it("writes _ for no modifiers and for no secret (unsigned), and the sync builder agrees", async () => {
    expect(originSignedPath("media-1", "/a.png", [], "webp")).toBe("/o/media-1/_/a.png.webp");
    const options = { base, origin: "cms", path: "x/y.png", modifiers: "w_32", ext: "png" } as const;
    const unsigned = await originVariantUrl(options);
    expect(unsigned).toBe("https://img.test/v/_/o/cms/w_32/x/y.png.png");
    expect(unsignedOriginUrl(options)).toBe(unsigned);
  });

  it("encodes each path segment with encodeURIComponent and signs the encoded form", async () => {
    expect(encodeOriginPath("/summer 2026/Café & co/50%.jpg")).toBe(
      "summer%202026/Caf%C3%A9%20%26%20co/50%25.jpg",
    );
    const url = await originVariantUrl({
      base,
      secret: SECRET,
      origin: "cms",
      path: "a b/c?d.jpg",
      ext: "jpg",
    });
    const signed = "/o/cms/_/a%20b/c%3Fd.jpg.jpg";
    expect(url).toBe(
      `https://img.test/v/${createHmac("sha256", SECRET).update(signed).digest("base64url")}${signed}`,
    );
    // The URL parses back to the same path: no segment is lost or merged.
    expect(new URL(url).pathname.endsWith(signed)).toBe(true);
  });

  it("refuses empty, . and .. segments and bad origin names", () => {
    for (const path of ["", "/", "a//b.jpg", "../etc/passwd", "a/./b.jpg", "a/.."]) {
      expect(() => encodeOriginPath(path), path).toThrow(TypeError);
    }
    for (const origin of ["", "CMS", "a/b", "a_b", "x".repeat(33)]) {
      expect(() => unsignedOriginUrl({ base, origin, path: "a.jpg" }), origin).toThrow(TypeError);
    }
    expect(() => unsignedOriginUrl({ base, origin: "x".repeat(32), path: "a.jpg" })).not.toThrow();
  });

  it("builds a srcset of origin URLs, signed or unsigned, within the source's width", async () => {
    const signed = await originSrcset({
      base,
      secret: SECRET,
      origin: "cms",
      path: "p.jpg",
      widths: [320, 640, 1280],
      sourceWidth: 1000,
      modifiers: ["q_60", "w_5"],
    });
    const entries = signed.split(", ");
    expect(entries.map((entry) => entry.split(" ")[1])).toEqual(["320w", "640w", "1000w"]);
    const [url320] = entries[0]!.split(" ");
    const signed320 = "/o/cms/q_60,w_320/p.jpg.auto";
    expect(url320).toBe(
      `https://img.test/v/${createHmac("sha256", SECRET).update(signed320).digest("base64url")}${signed320}`,
    );
    const unsigned = await originSrcset({
      base,
      origin: "cms",
      path: "p.jpg",
      widths: [16, 32],
      ext: "webp",
    });
    expect(unsigned).toBe(
      "https://img.test/v/_/o/cms/w_16/p.jpg.webp 16w, https://img.test/v/_/o/cms/w_32/p.jpg.webp 32w",
    );
  });

  it("keeps unsigned srcset URLs on the allow-list: the source's width is asked as the next listed width", async () => {
    const unsigned = await originSrcset({
      base,
      origin: "cms",
      path: "p.jpg",
      widths: [320, 640, 1280, 1920],
      sourceWidth: 1000,
      ext: "webp",
    });
    // The server answers w_1280 of a 1000 px source with 1000 px (no upscaling), as `1000w` says.
    expect(unsigned).toBe(
      [
        "https://img.test/v/_/o/cms/w_320/p.jpg.webp 320w",
        "https://img.test/v/_/o/cms/w_640/p.jpg.webp 640w",
        "https://img.test/v/_/o/cms/w_1280/p.jpg.webp 1000w",
      ].join(", "),
    );
  });
});
