import { variantUrl } from "@pixport/url-signer";
import { beforeAll, describe, expect, it } from "vitest";
import { call, newKey, quadrants, upload, useServer } from "./harness.js";

const SECRET = "trial-variants-secret-0123456789";

describe("a trial account's computed variants have a monthly allowance", () => {
  const running = useServer({
    delivery: { signingKeys: [SECRET] },
    policies: {
      testRequestsPerMinute: 1_000_000,
      liveRequestsPerMinute: 1_000_000,
      trialVariantsPerMonth: 2,
    },
  });
  const url = async (imageId: string, width: number) =>
    new URL(
      await variantUrl({ base: running.url, secret: SECRET, imageId, modifiers: [`w_${width}`], ext: "png" }),
    ).pathname;
  let trialImage: string;
  let upgradedImage: string;

  beforeAll(async () => {
    const trial = await newKey(running.server, "live", "trial-variants", { trial: true });
    trialImage = (await upload(running.url, trial, await quadrants(80, 40), "trial")).id;
    expect((await call(running.url, "POST", `/v1/images/${trialImage}/publish`, { key: trial })).status).toBe(
      201,
    );
    const upgraded = await newKey(running.server, "live", "upgraded-variants");
    upgradedImage = (await upload(running.url, upgraded, await quadrants(80, 40), "upgraded")).id;
    expect(
      (await call(running.url, "POST", `/v1/images/${upgradedImage}/publish`, { key: upgraded })).status,
    ).toBe(201);
  });

  it("computes variants up to the allowance, then answers 403 QUOTA_EXCEEDED; made ones are still served", async () => {
    for (const width of [10, 20]) {
      const made = await call(running.url, "GET", await url(trialImage, width));
      expect(made.status).toBe(200);
      expect(made.headers.get("x-cache")).toBe("MISS");
    }
    const refused = await call(running.url, "GET", await url(trialImage, 30));
    expect(refused.status).toBe(403);
    expect(refused.json).toMatchObject({
      type: "https://docs.img-processing.com/errors/forbidden",
      error: "Forbidden",
      status: 403,
      code: "QUOTA_EXCEEDED",
    });
    expect(refused.json.message).toMatch(/allowance of 2 computed variants/);
    const again = await call(running.url, "GET", await url(trialImage, 10));
    expect(again.status).toBe(200);
    expect(again.headers.get("x-cache")).toBe("HIT");
    expect((await running.server.pipeline.usage("trial-variants")).variants).toBe(2);
  });

  it("does not cap an upgraded account", async () => {
    for (const width of [10, 20, 30, 40]) {
      expect((await call(running.url, "GET", await url(upgradedImage, width))).status).toBe(200);
    }
    expect((await running.server.pipeline.usage("upgraded-variants")).variants).toBe(4);
  });
});
