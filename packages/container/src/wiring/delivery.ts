import { randomBytes } from "node:crypto";
import { link, mkdir, readFile, rename, unlink, writeFile } from "node:fs/promises";
import type { ImageCodec, VariantSigner } from "@pixport/core";
import type { ResolvedPixportContainerConfig } from "../config.js";
import { pixportDataPaths } from "../data-paths.js";
import { createNodeVariantSigner } from "./node-variant-signer.js";

/**
 * The variant signer: the configured `delivery.signingKeys`, else a key made once and kept in the
 * data directory (so variant URLs survive restarts), else, without a data directory, a random key
 * of this process. Several nodes must share configured keys instead.
 */
export async function createSigner(settings: ResolvedPixportContainerConfig): Promise<VariantSigner> {
  const configured = settings.delivery.signingKeys;
  if (configured.length > 0) return createNodeVariantSigner(configured);
  const key =
    settings.dataDir === undefined
      ? randomBytes(32).toString("base64url")
      : await localSigningKey(settings.dataDir);
  return createNodeVariantSigner([key]);
}

/**
 * The key in `{dataDir}/delivery-signing-key` (32 random bytes, base64url, mode 0600), made on the
 * first start.
 */
async function localSigningKey(dataDir: string): Promise<string> {
  const file = pixportDataPaths(dataDir).signingKey;
  const read = async () => {
    try {
      return (await readFile(file, "utf8")).trim();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return "";
      throw error;
    }
  };
  const existing = await read();
  if (existing.length >= 16) return existing;
  await mkdir(dataDir, { recursive: true });
  // The key goes into a temp file first and is then linked to its name, so the file never exists
  // without its key: another process starting at the same moment reads a complete key or none
  // (creating the file and then writing into it let a second process read it empty).
  const temporary = `${file}.${process.pid}.${randomBytes(6).toString("hex")}~tmp`;
  await writeFile(temporary, `${randomBytes(32).toString("base64url")}\n`, { mode: 0o600, flag: "wx" });
  try {
    if (existing.length > 0) {
      // A damaged key file (shorter than any key pixport writes) is replaced.
      await rename(temporary, file);
    } else {
      await link(temporary, file).catch((error: unknown) => {
        // Another process made it first: its key is the one read below.
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      });
    }
  } finally {
    await unlink(temporary).catch(() => undefined);
  }
  return read();
}

/** Reads a custom test mark (`testWatermarkFile`) and its size (header only). */
export async function loadTestWatermark(codec: ImageCodec, file: string) {
  const image = new Uint8Array(await readFile(file));
  const header = await codec.probe(image);
  if (header === null) throw new TypeError(`testWatermarkFile ${file} is not a png, jpeg or webp image`);
  return { image, width: header.width, height: header.height };
}
