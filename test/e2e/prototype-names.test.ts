import { variantUrl } from "@pixport/url-signer";
import { beforeAll, describe, expect, it } from "vitest";
import { call, newKey, quadrants, upload, useServer } from "./harness.js";

// Every user-named lookup (presets, colour names, header maps) must see own keys only: a name that
// happens to be a member of Object.prototype is as unknown as any other unknown name.
const PROTOTYPE_NAMES = [
  "constructor",
  "__proto__",
  "toString",
  "hasOwnProperty",
  "valueOf",
  "isPrototypeOf",
  "__defineGetter__",
  "propertyIsEnumerable",
];
const SECRET = "prototype-names-secret-0123456789";

describe("names of Object.prototype's members are unknown names", () => {
  const running = useServer({
    delivery: { signingKeys: [SECRET], presets: { thumb: "w_20" }, allowUnsigned: true },
  });
  let key: string;
  let imageId: string;
  /** Status and body, the ones an unknown name gets compared with. */
  const answer = async (method: string, target: string, json?: unknown) => {
    const response = await call(running.url, method, target, json === undefined ? { key } : { key, json });
    return { status: response.status, body: response.json };
  };

  beforeAll(async () => {
    key = await newKey(running.server, "live", "prototype-names");
    imageId = (await upload(running.url, key, await quadrants(40, 40), "proto")).id;
    expect((await call(running.url, "POST", `/v1/images/${imageId}/publish`, { key })).status).toBe(201);
  });

  it("the known preset works, so the lookups below are live", async () => {
    expect((await answer("GET", `/v/_/${imageId}/p_thumb.png`)).status).toBe(200);
  });

  it.each(PROTOTYPE_NAMES)("unsigned preset p_%s answers like an unknown preset", async (name) => {
    const unknown = await answer("GET", `/v/_/${imageId}/p_nosuchpreset.webp`);
    expect(unknown.status).toBeGreaterThanOrEqual(400);
    expect(unknown.status).toBeLessThan(500);
    const prototypeName = await answer("GET", `/v/_/${imageId}/p_${name}.webp`);
    expect(prototypeName.status).toBe(unknown.status);
    expect(JSON.stringify(prototypeName.body)).toBe(
      JSON.stringify(unknown.body).replace("nosuchpreset", name),
    );
  });

  it.each(PROTOTYPE_NAMES)("signed p_%s and bg_ of that name answer like unknown names", async (name) => {
    for (const [modifier, unknownModifier] of [
      [`p_${name}`, "p_nosuchpreset"],
      [`w_10,bg_${name}`, "w_10,bg_nosuchcolour"],
    ] as const) {
      const target = async (modifiers: string) =>
        new URL(
          await variantUrl({
            base: running.url,
            secret: SECRET,
            imageId,
            modifiers: modifiers.split(","),
            ext: "png",
          }),
        ).pathname;
      const unknown = await answer("GET", await target(unknownModifier));
      expect(unknown.status).toBeGreaterThanOrEqual(400);
      expect(unknown.status).toBeLessThan(500);
      const prototypeName = await answer("GET", await target(modifier));
      expect(prototypeName.status, JSON.stringify(prototypeName.body)).toBe(unknown.status);
      expect(prototypeName.body.type).toBe(unknown.body.type);
    }
  });

  it.each(PROTOTYPE_NAMES)("POST signed-url with p_%s is a 422 naming modifiers", async (name) => {
    const response = await answer("POST", `/v1/images/${imageId}/signed-url`, { modifiers: `p_${name}` });
    expect(response.status, JSON.stringify(response.body)).toBe(422);
    expect(JSON.stringify(response.body.errors)).toMatch(/modifiers|p_/);
  });

  it.each(PROTOTYPE_NAMES)("a rotate background named %s is a 422 naming background_color", async (name) => {
    const response = await answer("POST", `/v1/images/${imageId}/rotate`, {
      angle: 45,
      background_color: name,
    });
    expect(response.status, JSON.stringify(response.body)).toBe(422);
    expect(JSON.stringify(response.body.errors)).toMatch(/background_color/);
  });
});
