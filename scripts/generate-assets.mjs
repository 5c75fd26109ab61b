// Generates the sample images of the README walk-through under examples/assets/: a 960 x 640
// photo-like JPEG (a warm sky gradient, a hill and a sun; deterministic noise, no download) and a
// 240 x 80 PNG logo with transparency. Run: node scripts/generate-assets.mjs
import { mkdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";

// sharp is a dependency of the testing package; resolve it from there.
const sharp = createRequire(new URL("../packages/testing/package.json", import.meta.url))("sharp");
const out = new URL("../examples/assets/", import.meta.url);
mkdirSync(out, { recursive: true });

const width = 960;
const height = 640;
const photo = Buffer.alloc(width * height * 3);
let seed = 11;
for (let y = 0; y < height; y++) {
  for (let x = 0; x < width; x++) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    const noise = ((seed >> 16) % 17) - 8;
    const hill = y > height * 0.62 + Math.sin(x / 90) * 40;
    const sun = (x - 700) ** 2 + (y - 180) ** 2 < 70 ** 2;
    const sky = [255 - (y * 90) / height, 170 - (y * 60) / height, 120 + (y * 100) / height];
    const pixel = sun ? [255, 236, 160] : hill ? [60 + (y - 400) / 4, 120 - (y - 400) / 8, 50] : sky;
    photo.set(
      pixel.map((value) => Math.max(0, Math.min(255, Math.round(value + noise)))),
      (y * width + x) * 3,
    );
  }
}
writeFileSync(
  new URL("cat.jpg", out),
  await sharp(photo, { raw: { width, height, channels: 3 } })
    .jpeg({ quality: 85 })
    .toBuffer(),
);

const logo = Buffer.alloc(240 * 80 * 4);
for (let y = 0; y < 80; y++) {
  for (let x = 0; x < 240; x++) {
    const inBar = y > 20 && y < 60 && ((x > 20 && x < 60) || (x > 90 && x < 130) || (x > 160 && x < 220));
    logo.set(inBar ? [30, 80, 200, 230] : [0, 0, 0, 0], (y * 240 + x) * 4);
  }
}
writeFileSync(
  new URL("logo.png", out),
  await sharp(logo, { raw: { width: 240, height: 80, channels: 4 } })
    .png()
    .toBuffer(),
);
console.log("wrote examples/assets/cat.jpg and examples/assets/logo.png");
