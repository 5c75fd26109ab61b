/** The groups of the BackgroundRemover suite: output, quality, transparency, orientation, errors, sizes, concurrency. */
import { isImagePipelineError, sniffImageFormat } from "@pixport/core";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { alphaMaskIoU, EASY_BACKGROUND_FIXTURES, orientedFixtureJpeg } from "../fixtures/background.js";
import { GARBAGE_BYTES } from "../fixtures/images.js";
import type { RemoverSuite } from "./background-remover.js";
import {
  COLOUR_CHECK_DEPTH,
  decodeRgb,
  deepSubject,
  expectRgbaPng,
  rejectionOf,
  TRANSPARENT_MAX,
} from "./background-remover-checks.js";

export function describeOutput(suite: RemoverSuite): void {
  const { remover, cutoutOf, first, timeout } = suite;
  describe("output", () => {
    it(
      "returns an RGBA PNG of the request's size for a JPEG input",
      async () => {
        const { output } = await cutoutOf(first);
        await expectRgbaPng(output, first.width, first.height);
      },
      timeout,
    );

    for (const format of ["png", "webp"] as const) {
      it(
        `returns an RGBA PNG of the request's size for a ${format.toUpperCase()} input`,
        async () => {
          const image = await first.render(format);
          expect(sniffImageFormat(image)).toBe(format);
          const output = await remover().remove({ image, width: first.width, height: first.height });
          await expectRgbaPng(output, first.width, first.height);
        },
        timeout,
      );
    }
  });
}

export function describeQuality(suite: RemoverSuite): void {
  describe("quality", () => {
    qualityOfEasyFixtures(suite);
    qualityOfHardFixtures(suite);
  });
}

function qualityOfEasyFixtures(suite: RemoverSuite): void {
  const { cutoutOf, minMeanIoU, timeout, options } = suite;
  it(
    `reaches a mean IoU of at least ${minMeanIoU} over the ${EASY_BACKGROUND_FIXTURES.length} easy fixtures`,
    async () => {
      const scores: { fixture: string; iou: number }[] = [];
      for (const fixture of EASY_BACKGROUND_FIXTURES) {
        const { output } = await cutoutOf(fixture);
        scores.push({ fixture: fixture.name, iou: await alphaMaskIoU(output, fixture) });
      }
      const mean = scores.reduce((total, score) => total + score.iou, 0) / scores.length;
      const report = scores.map((score) => `  ${score.iou.toFixed(3)}  ${score.fixture}`).join("\n");
      // biome-ignore lint/suspicious/noConsole: the per-fixture IoUs are the suite's quality report.
      console.log(
        `BackgroundRemover ${options.name}: IoU per easy fixture\n${report}\n  mean ${mean.toFixed(3)}`,
      );
      expect(mean, `mean IoU over the easy fixtures\n${report}`).toBeGreaterThanOrEqual(minMeanIoU);
    },
    timeout * 2,
  );
}

function qualityOfHardFixtures(suite: RemoverSuite): void {
  const { cutoutOf, colourTolerance, timeout } = suite;
  it(
    "keeps the subject's colours and its interior opaque, and makes the background transparent",
    async () => {
      for (const fixture of EASY_BACKGROUND_FIXTURES) {
        const { input, output } = await cutoutOf(fixture);
        const cutout = await expectRgbaPng(output, fixture.width, fixture.height);
        const { width, height } = fixture;
        const alphaAt = (x: number, y: number) => cutout.data[(y * width + x) * 4 + 3]!;

        const [sx, sy] = fixture.subjectPoint();
        expect(alphaAt(sx, sy), `${fixture.name}: alpha inside the subject at (${sx}, ${sy})`).toBe(255);
        const [bx, by] = fixture.backgroundPoint();
        const corners = [
          [2, 2],
          [width - 3, 2],
          [2, height - 3],
          [width - 3, height - 3],
        ] as const;
        for (const [x, y] of [[bx, by] as const, ...corners]) {
          expect(
            alphaAt(x, y),
            `${fixture.name}: alpha of the background at (${x}, ${y})`,
          ).toBeLessThanOrEqual(TRANSPARENT_MAX);
        }

        // Colours: every opaque pixel deep inside the subject is the input's pixel.
        const rgb = await decodeRgb(input);
        const deep = deepSubject(fixture.mask(), width, height, COLOUR_CHECK_DEPTH);
        let checked = 0;
        let worst = { difference: 0, x: 0, y: 0 };
        for (let index = 0; index < deep.length; index += 1) {
          if (deep[index] !== 1 || cutout.data[index * 4 + 3] !== 255) continue;
          checked += 1;
          for (let channel = 0; channel < 3; channel += 1) {
            const difference = Math.abs(cutout.data[index * 4 + channel]! - rgb[index * 3 + channel]!);
            if (difference > worst.difference) {
              worst = { difference, x: index % width, y: Math.floor(index / width) };
            }
          }
        }
        expect(checked, `${fixture.name}: opaque subject pixels compared`).toBeGreaterThan(0);
        expect(
          worst.difference,
          `${fixture.name}: largest channel difference to the input (at ${worst.x}, ${worst.y})`,
        ).toBeLessThanOrEqual(colourTolerance);
      }
    },
    timeout * 2,
  );
}

export function describeErrors(suite: RemoverSuite): void {
  const { remover, first, timeout } = suite;
  describe("errors", () => {
    const expectPixportError = (error: unknown) =>
      expect(isImagePipelineError(error), `expected a pixport error, received ${String(error)}`).toBe(true);

    it(
      "rejects a request whose size does not match the bytes with a pixport error",
      async () => {
        const fixture = EASY_BACKGROUND_FIXTURES[1]!;
        const image = await fixture.render("jpeg");
        expectPixportError(
          await rejectionOf(remover().remove({ image, width: fixture.width + 1, height: fixture.height })),
        );
      },
      timeout,
    );

    it(
      "rejects the stored (not the displayed) size of an EXIF-oriented image with a pixport error",
      async () => {
        const image = await orientedFixtureJpeg(first);
        expectPixportError(
          await rejectionOf(remover().remove({ image, width: first.height, height: first.width })),
        );
      },
      timeout,
    );

    it(
      "rejects when the signal is already aborted",
      async () => {
        const image = await first.render("jpeg");
        const controller = new AbortController();
        controller.abort();
        const error = await rejectionOf(
          remover().remove(
            { image, width: first.width, height: first.height },
            { signal: controller.signal },
          ),
        );
        // The signal's reason, an AbortError, or a pixport error; never an unrelated failure.
        const recognised =
          error === controller.signal.reason ||
          (error instanceof Error && error.name === "AbortError") ||
          isImagePipelineError(error);
        expect(recognised, `an abort, received ${String(error)}`).toBe(true);
      },
      timeout,
    );

    it(
      "rejects bytes that are no image with a pixport error",
      async () => {
        expectPixportError(
          await rejectionOf(remover().remove({ image: GARBAGE_BYTES, width: 10, height: 10 })),
        );
      },
      timeout,
    );
  });
}

export function describeSizes(suite: RemoverSuite): void {
  const { remover, timeout } = suite;
  describe("sizes", () => {
    it(
      "resolves an extreme aspect ratio (2000 x 3 px) at its size",
      async () => {
        const width = 2000;
        const height = 3;
        const rgb = new Uint8Array(width * height * 3).fill(245);
        for (let y = 0; y < height; y += 1) {
          for (let x = 900; x < 1100; x += 1) rgb.set([200, 30, 40], (y * width + x) * 3);
        }
        const image = await sharp(rgb, { raw: { width, height, channels: 3 } })
          .png()
          .toBuffer();
        const output = await remover().remove({ image: new Uint8Array(image), width, height });
        await expectRgbaPng(output, width, height);
      },
      timeout,
    );

    it(
      "resolves a 1 x 1 image at its size",
      async () => {
        const image = await sharp(Uint8Array.from([30, 70, 170]), {
          raw: { width: 1, height: 1, channels: 3 },
        })
          .png()
          .toBuffer();
        const output = await remover().remove({ image: new Uint8Array(image), width: 1, height: 1 });
        await expectRgbaPng(output, 1, 1);
      },
      timeout,
    );
  });
}

export function transparencyTests(suite: RemoverSuite): void {
  const { remover, first, timeout } = suite;
  it(
    "never makes a transparent or translucent input pixel more opaque",
    async () => {
      // The first fixture as an RGBA PNG with a transparent strip along the left border, a
      // transparent square inside the subject and a half-transparent band along the bottom.
      const { width, height } = first;
      const rgb = first.rgb();
      const rgba = new Uint8Array(width * height * 4);
      for (let y = 0; y < height; y += 1) {
        for (let x = 0; x < width; x += 1) {
          const index = y * width + x;
          rgba.set(rgb.subarray(index * 3, index * 3 + 3), index * 4);
          const transparent = x < 40 || (x >= 145 && x < 175 && y >= 50 && y < 75);
          rgba[index * 4 + 3] = transparent ? 0 : y >= 200 ? 128 : 255;
        }
      }
      const image = await sharp(rgba, { raw: { width, height, channels: 4 } })
        .png()
        .toBuffer();
      const output = await remover().remove({ image: new Uint8Array(image), width, height });
      const cutout = await expectRgbaPng(output, width, height);
      let violations = 0;
      let example = "";
      for (let index = 0; index < width * height; index += 1) {
        const before = rgba[index * 4 + 3]!;
        const after = cutout.data[index * 4 + 3]!;
        if (after > before) {
          violations += 1;
          example ||= `(${index % width}, ${Math.floor(index / width)}): alpha ${before} became ${after}`;
        }
      }
      expect(violations, `pixels more opaque than in the input, e.g. ${example}`).toBe(0);
      // Not everything was made transparent: the opaque subject stays opaque.
      const [sx, sy] = first.subjectPoint();
      expect(cutout.data[(sy * width + sx) * 4 + 3], `alpha inside the subject at (${sx}, ${sy})`).toBe(255);
    },
    timeout,
  );
}

export function orientationTests(suite: RemoverSuite): void {
  const { remover, first, minMeanIoU, timeout } = suite;
  it(
    "applies EXIF orientation: the result has the displayed size and orientation",
    async () => {
      const image = await orientedFixtureJpeg(first);
      const stored = await sharp(image).metadata();
      expect([stored.width, stored.height, stored.orientation], "stored size and orientation").toEqual([
        first.height,
        first.width,
        6,
      ]);
      const output = await remover().remove({ image, width: first.width, height: first.height });
      await expectRgbaPng(output, first.width, first.height);
      // A mask computed on the stored (rotated) pixels and stretched to the displayed size is far off.
      expect(await alphaMaskIoU(output, first), "IoU in the displayed orientation").toBeGreaterThanOrEqual(
        minMeanIoU,
      );
    },
    timeout,
  );
}

export function concurrencyTests(suite: RemoverSuite): void {
  const { remover, cutoutOf, colourTolerance, timeout } = suite;
  it(
    "gives two concurrent calls on different images their own results",
    async () => {
      // A red bottle and a blue shoe: different shapes, different colours at each subject point.
      const [one, two] = [EASY_BACKGROUND_FIXTURES[0]!, EASY_BACKGROUND_FIXTURES[5]!];
      // The same fixtures removed one at a time first (shared with the quality tests).
      const sequential = [await cutoutOf(one), await cutoutOf(two)];
      const results = await Promise.all(
        [one, two].map(async (fixture, index) =>
          remover().remove({
            image: sequential[index]!.input,
            width: fixture.width,
            height: fixture.height,
          }),
        ),
      );
      for (const [index, fixture] of [one, two].entries()) {
        const other = index === 0 ? two : one;
        const output = results[index]!;
        const cutout = await expectRgbaPng(output, fixture.width, fixture.height);
        const own = await alphaMaskIoU(output, fixture);
        const alone = await alphaMaskIoU(sequential[index]!.output, fixture);
        expect(
          own,
          `${fixture.name}: IoU when run concurrently vs alone (${alone.toFixed(3)})`,
        ).toBeGreaterThanOrEqual(alone - 0.02);
        expect(own, `${fixture.name}: closer to its own mask than to "${other.name}"`).toBeGreaterThan(
          await alphaMaskIoU(output, other),
        );
        // The pixels are this call's input's, not the other call's.
        const rgb = await decodeRgb(sequential[index]!.input);
        const [sx, sy] = fixture.subjectPoint();
        const offset = sy * fixture.width + sx;
        for (let channel = 0; channel < 3; channel += 1) {
          expect(
            Math.abs(cutout.data[offset * 4 + channel]! - rgb[offset * 3 + channel]!),
            `${fixture.name}: channel ${channel} at (${sx}, ${sy})`,
          ).toBeLessThanOrEqual(colourTolerance);
        }
      }
    },
    timeout * 2,
  );
}
