// Shared by the HTTP benchmarks: the generated fixture and a server child process.
import { spawn } from "node:child_process";
import sharp from "sharp";

/** A photo-like 1920x1280 JPEG (gradients + noise), generated so nothing is downloaded. */
export async function fixture() {
  const width = 1920;
  const height = 1280;
  const raw = Buffer.alloc(width * height * 3);
  let seed = 7;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      const noise = (seed >> 16) % 32;
      const offset = (y * width + x) * 3;
      raw[offset] = ((x * 255) / width + noise) & 255;
      raw[offset + 1] = ((y * 255) / height + noise) & 255;
      raw[offset + 2] = (((x + y) * 255) / (width + height)) & 255;
    }
  }
  return sharp(raw, { raw: { width, height, channels: 3 } })
    .jpeg({ quality: 90 })
    .toBuffer();
}

export function startChild(script, args, env = {}, nodeArgs = [], { stderr = "inherit" } = {}) {
  const child = spawn(process.execPath, [...nodeArgs, script, ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", stderr, "ipc"],
  });
  return new Promise((resolve, reject) => {
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match) resolve({ child, url: match[1], output: () => output });
    });
    child.once("exit", (code) => reject(new Error(`server exited ${code}: ${output}`)));
  });
}
