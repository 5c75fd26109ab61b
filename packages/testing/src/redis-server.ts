import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";

/** A private redis-server started for tests. */
export interface TestRedisServer {
  port: number;
  /** `redis://127.0.0.1:<port>` */
  url: string;
  /** Stops the server (SIGKILL when it does not exit within a second). */
  stop(): Promise<void>;
  /** Starts it again on the same port (after `stop`), e.g. to test recovery from an outage. */
  restart(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  server.close();
  await once(server, "close");
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

/**
 * Starts `redis-server` on a random loopback port, without persistence. Fails (never skips) when the
 * binary is missing, saying how to install it: `.ci/run` installs it on machines that lack it.
 */
export async function startRedisServer(): Promise<TestRedisServer> {
  if (spawnSync("redis-server", ["--version"]).error !== undefined) {
    throw new Error(
      "redis-server is not installed: run `apt-get install -y redis-server` (.ci/run does this in CI).",
    );
  }
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    const started = spawn(
      "redis-server",
      [
        "--port",
        String(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--maxmemory-policy",
        "noeviction",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    child = started;
    let output = "";
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`redis-server did not start: ${output}`)), 10_000);
      started.stdout?.on("data", (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes("Ready to accept connections")) {
          clearTimeout(timer);
          resolve();
        }
      });
      started.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`redis-server exited with ${code}: ${output}`));
      });
    });
    started.removeAllListeners("exit");
  };
  const stop = async () => {
    const running = child;
    child = undefined;
    if (running === undefined || running.exitCode !== null) return;
    const exited = once(running, "exit");
    running.kill("SIGTERM");
    const timer = setTimeout(() => running.kill("SIGKILL"), 1000);
    await exited;
    clearTimeout(timer);
  };
  await start();
  return { port, url: `redis://127.0.0.1:${port}`, stop, restart: start };
}
