// The generated half of bench/bytes.mjs's corpus: examples/assets/cat.jpg, crops and a recoloured
// copy of it, two generated photo-like textures, two text-like renders, a flat graphic, a
// transparent graphic and examples/assets/logo.png (transparent). Exact and small; the real
// photographs (scikit-image's, scripts/fetch-photos.mjs) are the other half.
import { readFileSync } from "node:fs";
import sharp from "sharp";

const asset = (name) => readFileSync(new URL(`../examples/assets/${name}`, import.meta.url));

function texture(width, height, seed, scale) {
  const raw = Buffer.alloc(width * height * 3);
  let state = seed;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      state = (state * 1103515245 + 12345) & 0x7fffffff;
      const noise = ((state >> 16) % 48) - 24;
      const wave = Math.sin(x / scale) * Math.cos(y / (scale * 1.7)) * 60;
      const offset = (y * width + x) * 3;
      raw[offset] = Math.max(0, Math.min(255, 120 + wave + noise + (x * 60) / width));
      raw[offset + 1] = Math.max(0, Math.min(255, 100 + wave * 0.6 + noise + (y * 80) / height));
      raw[offset + 2] = Math.max(0, Math.min(255, 90 - wave * 0.5 + noise));
    }
  }
  return sharp(raw, { raw: { width, height, channels: 3 } })
    .jpeg({ quality: 95 })
    .toBuffer();
}

/**
 * A raster drawn pixel by pixel (this sharp build reads no SVG): `paint(x, y)` returns RGBA.
 */
function draw(width, height, paint) {
  const raw = Buffer.alloc(width * height * 4);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) raw.set(paint(x, y), (y * width + x) * 4);
  }
  return sharp(raw, { raw: { width, height, channels: 4 } })
    .png()
    .toBuffer();
}

/** Text-like: rows of 1-2 px strokes in glyph-sized cells (sharp edges, like small type). */
function textLike(ink, paper, seed) {
  let state = seed;
  const glyphs = Array.from({ length: 64 }, () => {
    state = (state * 1103515245 + 12345) & 0x7fffffff;
    return state;
  });
  return draw(720, 480, (x, y) => {
    const row = Math.floor(y / 24);
    const inRow = y % 24;
    const cell = Math.floor(x / 10);
    const inCell = x % 10;
    if (inRow < 6 || inRow > 19 || inCell > 7 || (cell + row * 7) % 9 === 0) return paper;
    const bits = glyphs[(cell * 31 + row * 17) % 64];
    const stroke =
      (inCell < 2 && bits & 1) ||
      (inCell > 5 && bits & 2) ||
      (inRow < 8 && bits & 4) ||
      (inRow > 17 && bits & 8) ||
      (Math.abs(inRow - 13) < 1 && bits & 16) ||
      (Math.abs(inCell - inRow / 2 + 3) < 1 && bits & 32);
    return stroke ? ink : paper;
  });
}

/** `[name, bytes]` pairs. */
export async function generatedCorpus() {
  const cat = asset("cat.jpg");
  return [
    ["photo: cat", cat],
    [
      "photo: cat crop top-left",
      await sharp(cat).extract({ left: 0, top: 0, width: 640, height: 427 }).jpeg({ quality: 95 }).toBuffer(),
    ],
    [
      "photo: cat crop centre",
      await sharp(cat)
        .extract({ left: 160, top: 107, width: 640, height: 427 })
        .jpeg({ quality: 95 })
        .toBuffer(),
    ],
    [
      "photo: cat crop bottom-right",
      await sharp(cat)
        .extract({ left: 320, top: 213, width: 640, height: 427 })
        .jpeg({ quality: 95 })
        .toBuffer(),
    ],
    [
      "photo: cat recoloured",
      await sharp(cat).modulate({ hue: 120, saturation: 1.4 }).jpeg({ quality: 95 }).toBuffer(),
    ],
    ["texture: fine", await texture(800, 600, 7, 6)],
    ["texture: coarse", await texture(800, 600, 11, 40)],
    ["text-like: dark on light", await textLike([17, 17, 17, 255], [250, 250, 250, 255], 3)],
    ["text-like: light on dark", await textLike([238, 238, 238, 255], [27, 40, 56, 255], 5)],
    [
      "flat graphic",
      await draw(720, 480, (x, y) => {
        if ((x - 200) ** 2 + (y - 240) ** 2 < 150 ** 2) return [13, 59, 102, 255];
        if (x >= 380 && x < 640 && y >= 90 && y < 390) return [238, 150, 75, 255];
        if (y > 300 && Math.abs(x - 360) < (y - 300) * 2) return [249, 87, 56, 255];
        return [244, 211, 94, 255];
      }),
    ],
    [
      "transparent graphic",
      await draw(720, 480, (x, y) => {
        if ((x - 240) ** 2 + (y - 240) ** 2 < 200 ** 2) return [42, 157, 143, 204];
        if (x >= 300 && x < 660 && y >= 60 && y < 300) return [231, 111, 81, 153];
        return [0, 0, 0, 0];
      }),
    ],
    ["transparent logo (examples/assets/logo.png)", asset("logo.png")],
  ];
}
