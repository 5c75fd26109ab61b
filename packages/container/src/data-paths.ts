import path from "node:path";

/**
 * The file layout under a data directory (`dataDir`): private blobs, published copies, image
 * records, API keys, account flags, monthly quota counters and the delivery signing key made when
 * none is configured. The prebuilt server and its CLI share it, so both read the same files.
 */
export function pixportDataPaths(dataDir: string) {
  return {
    blobs: path.join(dataDir, "blobs"),
    publicBlobs: path.join(dataDir, "public"),
    images: path.join(dataDir, "images"),
    keys: path.join(dataDir, "keys"),
    accounts: path.join(dataDir, "accounts"),
    quota: path.join(dataDir, "quota"),
    signingKey: path.join(dataDir, "delivery-signing-key"),
  };
}

/** The layout {@link pixportDataPaths} returns. */
export type PixportDataPaths = ReturnType<typeof pixportDataPaths>;
