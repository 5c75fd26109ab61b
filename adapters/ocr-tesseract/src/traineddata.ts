import { createReadStream, createWriteStream } from "node:fs";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import { sweepTemporaryDirectories } from "@pixport/core/adapter-kit";

/** The English traineddata `@tesseract.js-data/eng` ships (LSTM, integer weights), gzipped. */
export function defaultLangPath(): string {
  const require = createRequire(import.meta.url);
  return path.join(path.dirname(require.resolve("@tesseract.js-data/eng/package.json")), "4.0.0_best_int");
}

const TEMP_PREFIX = "pixport-tessdata-";

/**
 * The traineddata of `langPath` (gzipped, as tesseract.js reads it) unpacked for the native
 * engine into a new private temporary directory (`$TMPDIR/pixport-tessdata-<pid>-*`, mode 0700),
 * so both engines read the same model. Directories left by owners that crashed are removed first.
 */
export async function unpackTraineddata(langPath: string, language: string): Promise<string> {
  await sweepTemporaryDirectories(TEMP_PREFIX, { directory: tmpdir(), readdir, rm, process });
  const directory = await mkdtemp(path.join(tmpdir(), `${TEMP_PREFIX}${process.pid}-`));
  try {
    await pipeline(
      createReadStream(path.join(langPath, `${language}.traineddata.gz`)),
      createGunzip(),
      createWriteStream(path.join(directory, `${language}.traineddata`), { mode: 0o600 }),
    );
  } catch (error) {
    await rm(directory, { recursive: true, force: true });
    throw error;
  }
  return directory;
}
