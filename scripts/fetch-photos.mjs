#!/usr/bin/env node
// fetch-photos: the real-photograph corpus of the quality tests and benches, kept outside the work
// tree (no image binaries in the repository).
//
//   node scripts/fetch-photos.mjs        # prints the corpus directory
//
// The photographs are scikit-image's sample data (public domain and CC0; see docs/delivery.md),
// taken from Debian's python3-skimage package: `apt-get download` (no root needed once the
// package lists exist), `dpkg-deb -x`, then the files below are checked against their SHA-256
// (scikit-image's own registry digests, so a copy from its wheel is the same) and written, each
// through a temporary file and a rename, with a manifest.json the test helper reads
// (`photoCorpus()` in packages/testing). Idempotent: a complete, verified directory is left as it is.
// Directory: PIXPORT_PHOTOS_DIR, else ${XDG_CACHE_HOME:-~/.cache}/pixport/photos.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { homedir, tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const DEB_PACKAGE = "python3-skimage";
const DATA_DIR = "usr/lib/python3/dist-packages/skimage/data";
const COPYRIGHT = "usr/share/doc/python3-skimage/copyright";

/** The corpus: file, kind, what it shows, and its SHA-256. */
export const PHOTOS = [
  [
    "astronaut.png",
    "portrait",
    "astronaut Eileen Collins (NASA)",
    "88431cd9653ccd539741b555fb0a46b61558b301d4110412b5bc28b5e3ea6cb5",
  ],
  [
    "camera.png",
    "grayscale",
    "photographer with a camera",
    "b0793d2adda0fa6ae899c03989482bff9a42d3d5690fc7e3648f2795d730c23a",
  ],
  [
    "chelsea.png",
    "animal",
    "a cat (Chelsea)",
    "596aa1e7cb875eb79f437e310381d26b338a81c2da23439704a73c4651e8c4bb",
  ],
  [
    "coffee.png",
    "still life",
    "a cup of coffee",
    "cc02f8ca188b167c775a7101b5d767d1e71792cf762c33d6fa15a4599b5a8de7",
  ],
  [
    "motorcycle_left.png",
    "scene",
    "a motorcycle indoors (Middlebury stereo)",
    "db18e9c4157617403c3537a6ba355dfeafe9a7eabb6b9b94cb33f6525dd49179",
  ],
  [
    "rocket.jpg",
    "landscape",
    "a Falcon 9 launch (SpaceX)",
    "c2dd0de7c538df8d111e479619b129464d0269d0ae5fd18ca91d33a7fdfea95c",
  ],
  [
    "hubble_deep_field.jpg",
    "space",
    "Hubble eXtreme Deep Field (NASA)",
    "3a19c5dd8a927a9334bb1229a6d63711b1c0c767fb27e2286e7c84a3e2c2f5f4",
  ],
  [
    "retina.jpg",
    "medical",
    "fundus photograph of a retina",
    "38a07f36f27f095e818aea7b96d34202c05176d30253c66733f2e00379e9e0e6",
  ],
  [
    "ihc.png",
    "microscopy",
    "immunohistochemistry stain",
    "f8dd1aa387ddd1f49d8ad13b50921b237df8e9b262606d258770687b0ef93cef",
  ],
  [
    "coins.png",
    "grayscale",
    "coins (Brooklyn Museum)",
    "f8d773fc9cfa6f4d8e5942dc34d0a0788fcaed2a4fefbbed0aef5398d7ef4cba",
  ],
  [
    "page.png",
    "text",
    "scanned printed page",
    "341a6f0a61557662b02734a9b6e56ec33a915b2c41886b97509dedf2a43b47a3",
  ],
  [
    "text.png",
    "text",
    "text on a plain background",
    "bd84aa3a6e3c9887850d45d606c96b2e59433fbef50338570b63c319e668e6d1",
  ],
  [
    "logo.png",
    "transparent",
    "scikit-image logo (RGBA)",
    "f2c57fe8af089f08b5ba523d95573c26e62904ac5967f4c8851b27d033690168",
  ],
  ["brick.png", "texture", "brick wall", "7966caf324f6ba843118d98f7a07746d22f6a343430add0233eca5f6eaaa8fcf"],
  ["grass.png", "texture", "grass", "b6b6022426b38936c43a4ac09635cd78af074e90f42ffa8227ac8b7452d39f89"],
  ["gravel.png", "texture", "gravel", "c48615b451bf1e606fbd72c0aa9f8cc0f068ab7111ef7d93bb9b0f2586440c12"],
].map(([file, kind, title, sha256]) => ({ file, kind, title, sha256 }));

/** Where the corpus lives. */
export function photosDir(env = process.env) {
  if (env.PIXPORT_PHOTOS_DIR) return path.resolve(env.PIXPORT_PHOTOS_DIR);
  const cache = env.XDG_CACHE_HOME || path.join(homedir(), ".cache");
  return path.join(cache, "pixport", "photos");
}

const sha256 = (file) => createHash("sha256").update(readFileSync(file)).digest("hex");
const verified = (dir, photo) =>
  existsSync(path.join(dir, photo.file)) && sha256(path.join(dir, photo.file)) === photo.sha256;

/** Whether `dir` holds every photograph, verified, and the manifest. */
export function photosPresent(dir = photosDir()) {
  return existsSync(path.join(dir, "manifest.json")) && PHOTOS.every((photo) => verified(dir, photo));
}

function writeAtomically(file, data) {
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, data);
  renameSync(temporary, file);
}

function run(program, args, cwd) {
  const result = spawnSync(program, args, { cwd, encoding: "utf8" });
  if (result.error) return `${program}: ${result.error.message}`;
  return result.status === 0
    ? undefined
    : `${program} ${args.join(" ")}: ${result.stderr.trim() || `exit ${result.status}`}`;
}

/** Downloads the package into a temporary directory and extracts it; returns that directory. */
function downloadPackage(log) {
  const work = mkdtempSync(path.join(tmpdir(), "pixport-photos-"));
  log(`fetch-photos: apt-get download ${DEB_PACKAGE}`);
  let failure = run("apt-get", ["download", "-qq", DEB_PACKAGE], work);
  // A fresh machine may have no package lists yet; as root, read them once and retry.
  if (failure !== undefined && process.getuid?.() === 0) {
    run("apt-get", ["update", "-qq"], work);
    failure = run("apt-get", ["download", "-qq", DEB_PACKAGE], work);
  }
  const deb = readdirSync(work).find((name) => name.endsWith(".deb"));
  failure ??=
    deb === undefined ? "apt-get download wrote no .deb" : run("dpkg-deb", ["-x", deb, "extracted"], work);
  if (failure !== undefined) {
    rmSync(work, { recursive: true, force: true });
    throw new Error(
      `fetch-photos: could not get Debian's ${DEB_PACKAGE} (${failure}). Run \`apt-get update\` (as root) and try again, or put scikit-image's skimage/data files (${PHOTOS.map((photo) => photo.file).join(", ")}) in PIXPORT_PHOTOS_DIR.`,
    );
  }
  return work;
}

/**
 * Makes the corpus present (downloading only when a file is missing or differs) and returns its
 * directory. `log` receives progress lines.
 */
export function fetchPhotos({ dir = photosDir(), log = (line) => console.error(line) } = {}) {
  if (photosPresent(dir)) return dir;
  mkdirSync(dir, { recursive: true });
  if (!PHOTOS.every((photo) => verified(dir, photo))) {
    const work = downloadPackage(log);
    try {
      const data = path.join(work, "extracted", DATA_DIR);
      for (const photo of PHOTOS) {
        const source = path.join(data, photo.file);
        if (!existsSync(source) || sha256(source) !== photo.sha256) {
          throw new Error(
            `fetch-photos: ${photo.file} in ${DEB_PACKAGE} is missing or not the expected file (SHA-256 ${photo.sha256}).`,
          );
        }
        writeAtomically(path.join(dir, photo.file), readFileSync(source));
      }
      const copyright = path.join(work, "extracted", COPYRIGHT);
      if (existsSync(copyright)) writeAtomically(path.join(dir, "COPYRIGHT.debian"), readFileSync(copyright));
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }
  writeAtomically(
    path.join(dir, "manifest.json"),
    `${JSON.stringify({ source: `Debian ${DEB_PACKAGE} (scikit-image sample data)`, photos: PHOTOS }, null, 2)}\n`,
  );
  log(`fetch-photos: ${PHOTOS.length} photographs in ${dir}`);
  return dir;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    console.log(fetchPhotos());
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  }
}
