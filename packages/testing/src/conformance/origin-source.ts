import { ErrorCodes, isImagePipelineError, type OriginAnswer, type OriginSource } from "@pixport/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Colors, solidImage } from "../fixtures/images.js";

/** Where an adapter's test puts objects for the suite: the origin's own storage. */
export interface OriginFixture {
  /** The source under test, over the storage `put` writes to. */
  source: OriginSource;
  /** Writes `data` at `path` (`/`-separated, unencoded segments) in the origin's storage. */
  put(path: string, data: Uint8Array): Promise<void>;
  /** Removes the fixture's storage. */
  close(): Promise<void>;
}

/** Options of {@link describeOriginSourceConformance}. */
export interface OriginSourceConformanceOptions {
  name: string;
  create: () => Promise<OriginFixture>;
}

const MAX = 1024 * 1024;

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  return isImagePipelineError(error) ? error.code : `not a pixport error: ${String(error)}`;
}

const found = (answer: OriginAnswer) => {
  if (answer.status !== "found") throw new Error(`expected found, received ${answer.status}`);
  return answer;
};

/**
 * The behaviour every OriginSource must show (see the port's TSDoc): the bytes at a path, found
 * with validators; not-found for a missing path; not-modified for current validators and the new
 * bytes once the object changed; the byte limit and the image sniff enforced; segments that need
 * encoding (spaces, `%`, `?`, `#`, non-ASCII) read as the same object.
 */
export function describeOriginSourceConformance(options: OriginSourceConformanceOptions): void {
  describe(`OriginSource conformance: ${options.name}`, () => {
    let fixture: OriginFixture;
    let red: Uint8Array;
    beforeAll(async () => {
      fixture = await options.create();
      red = await solidImage(8, 4, Colors.red, "png");
    });
    afterAll(async () => {
      await fixture.close();
    });

    it("answers the bytes at a path with validators, and not-found for a missing one", async () => {
      await fixture.put("products/shoe.png", red);
      const answer = found(await fixture.source.get({ segments: ["products", "shoe.png"], maxBytes: MAX }));
      expect([...answer.data]).toEqual([...red]);
      expect(answer.validators.etag ?? answer.validators.lastModified).toBeTruthy();
      const missing = await fixture.source.get({ segments: ["products", "nothing.png"], maxBytes: MAX });
      expect(missing.status).toBe("not-found");
    });

    it("answers not-modified to current validators and the new bytes after a change", async () => {
      await fixture.put("change/a.png", red);
      const first = found(await fixture.source.get({ segments: ["change", "a.png"], maxBytes: MAX }));
      const again = await fixture.source.get({
        segments: ["change", "a.png"],
        validators: first.validators,
        maxBytes: MAX,
      });
      expect(again.status).toBe("not-modified");
      const blue = await solidImage(8, 4, Colors.blue, "png");
      // A later modification time for stores that validate by it (second resolution).
      await new Promise((resolve) => setTimeout(resolve, 1100));
      await fixture.put("change/a.png", blue);
      const changed = found(
        await fixture.source.get({
          segments: ["change", "a.png"],
          validators: first.validators,
          maxBytes: MAX,
        }),
      );
      expect([...changed.data]).toEqual([...blue]);
    });

    it("refuses a body over maxBytes and bytes that are not an image", async () => {
      await fixture.put("limits/big.png", red);
      expect(
        await codeOf(fixture.source.get({ segments: ["limits", "big.png"], maxBytes: red.byteLength - 1 })),
      ).toBe(ErrorCodes.IMAGE_TOO_LARGE);
      await fixture.put(
        "limits/page.png",
        new TextEncoder().encode("<html><body>not an image</body></html>"),
      );
      expect(await codeOf(fixture.source.get({ segments: ["limits", "page.png"], maxBytes: MAX }))).toBe(
        ErrorCodes.INVALID_IMAGE,
      );
    });

    it("reads segments that need encoding as the same object", async () => {
      const name = "a b%c?d#e é.png";
      await fixture.put(`odd/${name}`, red);
      const answer = found(await fixture.source.get({ segments: ["odd", name], maxBytes: MAX }));
      expect([...answer.data]).toEqual([...red]);
    });
  });
}
