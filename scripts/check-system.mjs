#!/usr/bin/env node
// check-system: the system packages the test suite needs, checked before anything runs.
// `pnpm test` starts with it. Every requirement is found, or:
// - as root on a system with apt-get, the missing packages are installed (`apt-get install -y`);
// - otherwise it prints the one command that installs them and exits 1, before any test runs.
// PIXPORT_SYSTEM_CHECK=report never installs (it reports as a non-root user would).
import { spawnSync } from "node:child_process";
import { accessSync, constants, readdirSync } from "node:fs";
import path from "node:path";
import { fetchPhotos, photosDir, photosPresent } from "./fetch-photos.mjs";

/** Whether an executable of this name is on PATH. */
function onPath(program) {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (dir === "") continue;
    try {
      accessSync(path.join(dir, program), constants.X_OK);
      return true;
    } catch {
      // Not in this directory.
    }
  }
  return false;
}

/** Whether a shared library file is in the system's library directories (two levels deep). */
function hasLibrary(file) {
  const search = (dir, depth) => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return false;
    }
    for (const entry of entries) {
      if (entry.name === file) return true;
      if (depth > 0 && entry.isDirectory() && search(path.join(dir, entry.name), depth - 1)) return true;
    }
    return false;
  };
  return ["/usr/lib", "/usr/lib64", "/lib", "/lib64"].some((dir) => search(dir, 1));
}

function hasFont(family) {
  if (!onPath("fc-list")) return false;
  const listed = spawnSync("fc-list", [], { encoding: "utf8" });
  return listed.status === 0 && listed.stdout.toLowerCase().includes(family.toLowerCase());
}

/** What the tests start or call, and the Debian/Ubuntu packages that provide it. */
const requirements = [
  // Private Redis instances on random ports (the redis adapter, the scale-out e2e tests).
  { what: "redis-server", packages: ["redis-server"], found: () => onPath("redis-server") },
  // Throw-away certificates for the URL-import tests' local HTTPS servers.
  { what: "openssl", packages: ["openssl"], found: () => onPath("openssl") },
  // The README walk-through test runs its curl commands verbatim.
  { what: "curl", packages: ["curl"], found: () => onPath("curl") },
  // The OCR tests render their documents in DejaVu Sans (sharp's SVG text goes through fontconfig).
  {
    what: "the DejaVu Sans font",
    packages: ["fontconfig", "fonts-dejavu-core"],
    found: () => hasFont("DejaVu Sans"),
  },
  // The playground and API reference run in the system's Chromium (playwright-core drives it; no
  // browser is ever downloaded).
  { what: "chromium", packages: ["chromium"], found: () => onPath("chromium") },
  // The OCR suites run on both engines, the second one the tesseract executable.
  { what: "tesseract", packages: ["tesseract-ocr"], found: () => onPath("tesseract") },
  // The prebuilt server's launcher preloads tcmalloc when the system has it; its test needs it.
  {
    what: "libtcmalloc_minimal.so.4",
    packages: ["libtcmalloc-minimal4"],
    found: () => hasLibrary("libtcmalloc_minimal.so.4"),
  },
  // The suite runs in a network namespace holding only loopback (scripts/loopback-only).
  { what: "unshare", packages: ["util-linux"], found: () => onPath("unshare") },
  { what: "ip", packages: ["iproute2"], found: () => onPath("ip") },
];

const missingNow = () => requirements.filter((requirement) => !requirement.found());

function fail(lines) {
  process.stderr.write(`${lines.join("\n")}\n`);
  process.exit(1);
}

const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
if (major < 20 || (major === 20 && minor < 11)) {
  fail([`check-system: the tests need Node.js 20.11 or newer; this is ${process.version}.`]);
}

// The real-photograph corpus of the quality tests (scripts/fetch-photos.mjs): fetched into a cache
// outside the work tree here, before the suite enters its loopback-only namespace.
if (process.env.PIXPORT_SYSTEM_CHECK === "report") {
  if (!photosPresent()) {
    fail([
      `check-system: the photo corpus is not in ${photosDir()}. Fetch it with:`,
      "",
      "  node scripts/fetch-photos.mjs",
      "",
    ]);
  }
} else {
  try {
    fetchPhotos({ log: (line) => console.log(line) });
  } catch (error) {
    fail([error instanceof Error ? error.message : String(error)]);
  }
}

let missing = missingNow();
if (missing.length === 0) process.exit(0);

const packages = [...new Set(missing.flatMap((requirement) => requirement.packages))];
const what = missing.map((requirement) => requirement.what).join(", ");
const isRoot = process.getuid?.() === 0 && process.env.PIXPORT_SYSTEM_CHECK !== "report";

if (isRoot && onPath("apt-get")) {
  console.log(`check-system: installing ${packages.join(" ")} (missing: ${what})`);
  const apt = (args) =>
    spawnSync("apt-get", args, {
      stdio: "inherit",
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
    }).status === 0;
  if (!apt(["update", "-qq"]) || !apt(["install", "-y", "-qq", ...packages])) {
    fail([`check-system: apt-get could not install ${packages.join(" ")}.`]);
  }
  missing = missingNow();
  if (missing.length === 0) process.exit(0);
  fail([
    `check-system: still missing after the install: ${missing.map((requirement) => requirement.what).join(", ")}.`,
  ]);
}

if (!onPath("apt-get")) {
  fail([
    `check-system: the tests need ${what}, which this system lacks.`,
    `On Debian or Ubuntu the packages are: ${packages.join(" ")}. Install the equivalents, then run the tests again.`,
  ]);
}
fail([
  `check-system: the tests need ${what}, which this system lacks. Install what is missing with:`,
  "",
  `  sudo apt-get install -y ${packages.join(" ")}`,
  "",
  "then run the tests again.",
]);
