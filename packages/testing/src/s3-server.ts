import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";

/** A private S3-compatible server (s3rver) started for tests. */
export interface TestS3Server {
  port: number;
  /** `http://127.0.0.1:<port>`: use it as the S3 client's `endpoint` with `forcePathStyle: true`. */
  endpoint: string;
  /** Region to give the S3 client (s3rver accepts any). */
  region: string;
  /** Credentials s3rver accepts (its defaults). */
  credentials: { accessKeyId: string; secretAccessKey: string };
  /** Buckets created at start. */
  buckets: readonly string[];
  /** Directory holding the objects (`{directory}/{bucket}/...`), for assertions on the raw store. */
  directory: string;
  /** Stops the server and removes its directory. */
  stop(): Promise<void>;
}

interface S3rverInstance {
  run(): Promise<{ port: number; address: string }>;
  close(): Promise<void>;
}
type S3rverConstructor = new (options: Record<string, unknown>) => S3rverInstance;

/**
 * Starts s3rver on a random loopback port over a fresh temp directory, with `buckets` created.
 * S3 clients talking to it must set `requestChecksumCalculation` and `responseChecksumValidation`
 * to `"WHEN_REQUIRED"` (s3rver does not understand the SDK's default streaming checksums and would
 * store the checksum trailer as object bytes).
 */
export async function startS3Server(buckets: readonly string[] = ["pixport"]): Promise<TestS3Server> {
  const S3rver = createRequire(import.meta.url)("s3rver") as S3rverConstructor;
  const directory = await mkdtemp(path.join(tmpdir(), "pixport-s3rver-"));
  const server = new S3rver({
    address: "127.0.0.1",
    port: 0,
    silent: true,
    directory,
    configureBuckets: buckets.map((name) => ({ name })),
  });
  const { port } = await server.run();
  return {
    port,
    endpoint: `http://127.0.0.1:${port}`,
    region: "us-east-1",
    credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
    buckets,
    directory,
    async stop() {
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
