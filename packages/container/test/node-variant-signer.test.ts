import { createVariantSigner, sign } from "@pixport/url-signer";
import { describe, expect, it } from "vitest";
import { createNodeVariantSigner } from "../src/wiring/node-variant-signer.js";

describe("createNodeVariantSigner", () => {
  it("signs exactly as @pixport/url-signer does, and verifies its signatures with every secret", async () => {
    const node = createNodeVariantSigner(["new-secret", "old-secret"]);
    const web = createVariantSigner(["new-secret", "old-secret"]);
    for (const path of ["/image_abc/w_200.jpeg", "/image_abc/_.auto", "/image_x/crop_1:2:3:4,h_5.webp"]) {
      expect(await node.sign(path)).toBe(await web.sign(path));
      expect(await node.verify(path, await sign("old-secret", path))).toBe(true);
      expect(await web.verify(path, await node.sign(path))).toBe(true);
    }
  });

  it("refuses wrong, truncated, foreign and non-canonical signatures", async () => {
    const node = createNodeVariantSigner(["secret"]);
    const path = "/image_abc/w_200.jpeg";
    const good = await node.sign(path);
    expect(await node.verify(path, good)).toBe(true);
    expect(await node.verify("/image_abc/w_201.jpeg", good)).toBe(false);
    expect(await node.verify(path, good.slice(0, -2))).toBe(false);
    expect(await node.verify(path, await sign("other", path))).toBe(false);
    expect(await node.verify(path, `${good}=`)).toBe(false);
    expect(await node.verify(path, "")).toBe(false);
    expect(() => createNodeVariantSigner(["", ""])).toThrow(TypeError);
  });
});
