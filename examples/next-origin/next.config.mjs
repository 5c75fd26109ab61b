import { readFileSync } from "node:fs";

/**
 * A static export (`next build` writes `out/`) whose images come from pixport: next/image calls
 * the loader for every width of every srcset, and the loader writes unsigned origin variant URLs.
 * pixport's allow-list for the origin (`delivery.origins.{name}.unsigned.widths`) must hold every
 * width Next asks for: its `deviceSizes` and `imageSizes`, kept in image-sizes.json so the server's
 * configuration can read the same list.
 */
const { deviceSizes, imageSizes } = JSON.parse(
  readFileSync(new URL("./image-sizes.json", import.meta.url), "utf8"),
);

/** @type {import("next").NextConfig} */
const config = {
  output: "export",
  images: { loader: "custom", loaderFile: "./pixport-loader.js", deviceSizes, imageSizes },
  // A one-off build (CI, the smoke test) gains nothing from writing Turbopack's cache to disk.
  experimental: { turbopackFileSystemCacheForBuild: false },
};

export default config;
