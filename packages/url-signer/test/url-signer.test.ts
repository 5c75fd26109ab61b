import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  canonicalModifiers,
  createVariantSigner,
  originSrcset,
  originVariantUrl,
  sign,
  signedPath,
  srcset,
  variantUrl,
  verify,
} from "../src/index.js";

const ID = "image_abcdefghijklmnopqrstuvwx";

describe("@pixport/url-signer", () => {
  it("puts tokens in one canonical order: by key, then by token; empty tokens dropped", () => {
    expect(canonicalModifiers("w_200,fit_cover,h_100")).toBe("fit_cover,h_100,w_200");
    expect(canonicalModifiers(["q_80", "", "bg_fff", "w_10"])).toBe("bg_fff,q_80,w_10");
    expect(signedPath(ID, [], "auto")).toBe(`/${ID}/_.auto`);
  });

  it("signs with HMAC-SHA256, base64url without padding (the same bytes as node:crypto)", async () => {
    const path = signedPath(ID, ["w_200", "fit_cover"], "webp");
    const expected = createHmac("sha256", "secret-0123456789abcdef").update(path).digest("base64url");
    expect(await sign("secret-0123456789abcdef", path)).toBe(expected);
    expect(expected).not.toMatch(/[=+/]/);
  });

  it("verifies with any of several secrets (rotation) and refuses others", async () => {
    const path = signedPath(ID, ["w_1"], "png");
    const oldSignature = await sign("old-secret-0123456789", path);
    const signer = createVariantSigner(["new-secret-0123456789", "old-secret-0123456789"]);
    expect(await signer.verify(path, oldSignature)).toBe(true);
    expect(await signer.verify(path, await signer.sign(path))).toBe(true);
    expect(await signer.sign(path)).toBe(await sign("new-secret-0123456789", path));
    expect(await verify(["new-secret-0123456789"], path, oldSignature)).toBe(false);
    expect(await verify(["old-secret-0123456789"], path, oldSignature.slice(0, -2))).toBe(false);
    expect(await verify(["old-secret-0123456789"], signedPath(ID, ["w_2"], "png"), oldSignature)).toBe(false);
    expect(() => createVariantSigner([""])).toThrow(TypeError);
  });

  it("builds variant URLs with an expiry token and a srcset of widths", async () => {
    const expiresAt = new Date("2030-01-01T00:00:00Z");
    const url = await variantUrl({
      base: "https://img.test/",
      secret: "s3cret-0123456789",
      imageId: ID,
      modifiers: "w_10,h_5",
      expiresAt,
      ext: "jpg",
    });
    const path = `/${ID}/exp_1893456000,h_5,w_10.jpg`;
    expect(url).toBe(`https://img.test/v/${await sign("s3cret-0123456789", path)}${path}`);
    const set = await srcset({
      base: "https://img.test",
      secret: "s3cret-0123456789",
      imageId: ID,
      widths: [320, 640],
      modifiers: ["w_99", "q_70"],
    });
    const entries = set.split(", ");
    expect(entries).toHaveLength(2);
    expect(entries[0]).toMatch(
      new RegExp(`^https://img\\.test/v/[A-Za-z0-9_-]{43}/${ID}/q_70,w_320\\.auto 320w$`),
    );
    expect(entries[1]).toMatch(/q_70,w_640\.auto 640w$/);
  });

  it("writes q_auto for q_auto:good (one variant, its short spelling) in every builder; other levels as given", async () => {
    expect(canonicalModifiers("w_10,q_auto:good")).toBe("q_auto,w_10");
    expect(canonicalModifiers(["q_auto:eco", "w_10"])).toBe("q_auto:eco,w_10");
    expect(canonicalModifiers(["constructor", "q_auto:best"])).toBe("constructor,q_auto:best");
    const secret = "s3cret-0123456789";
    const url = await variantUrl({
      base: "https://img.test",
      secret,
      imageId: ID,
      modifiers: "q_auto:good,w_10",
    });
    const path = `/${ID}/q_auto,w_10.auto`;
    expect(url).toBe(`https://img.test/v/${await sign(secret, path)}${path}`);
    const set = await srcset({
      base: "https://img.test",
      secret,
      imageId: ID,
      widths: [320],
      modifiers: ["q_auto:good"],
    });
    expect(set).toMatch(new RegExp(`/${ID}/q_auto,w_320\\.auto 320w$`));
    const origin = { base: "https://img.test", secret, origin: "cms", path: "a.jpg" };
    const originUrl = await originVariantUrl({ ...origin, modifiers: ["w_64", "q_auto:good"] });
    expect(originUrl).toBe(
      `https://img.test/v/${await sign(secret, "/o/cms/q_auto,w_64/a.jpg.auto")}/o/cms/q_auto,w_64/a.jpg.auto`,
    );
    expect(await originSrcset({ ...origin, widths: [64], modifiers: ["q_auto:good"] })).toMatch(
      /\/o\/cms\/q_auto,w_64\/a\.jpg\.auto 64w$/,
    );
  });
});
