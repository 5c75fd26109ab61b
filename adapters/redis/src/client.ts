import { ErrorCodes, ImagePipelineError, isImagePipelineError } from "@pixport/core";
import { parseOptions } from "@pixport/core/adapter-kit";
import type { Redis } from "ioredis";
import { z } from "zod";

/** Whether `value` looks like a constructed ioredis client (or Cluster): it has the calls the adapters use. */
function isRedisClient(value: unknown): value is Redis {
  const client = value as Partial<Record<"get" | "set" | "defineCommand", unknown>> | null;
  return (
    typeof client === "object" &&
    client !== null &&
    typeof client.get === "function" &&
    typeof client.set === "function" &&
    typeof client.defineCommand === "function"
  );
}

/** Options shared by every Redis adapter (checked by each factory; unknown keys are refused). */
export const redisAdapterOptionsSchema = z
  .object({
    /**
     * A constructed ioredis client. The adapter never connects or quits it: its owner does. For a
     * server, configure it to fail fast during an outage (`enableOfflineQueue: false`,
     * `maxRetriesPerRequest: 1`), so requests get an answer instead of waiting in ioredis' queue.
     */
    client: z.custom<Redis>(isRedisClient, {
      message: "must be a constructed ioredis client (new Redis(url))",
    }),
    /**
     * Prefix of every key this adapter writes, so several deployments (or test runs) can share one
     * Redis. Keys that must be updated together carry a `{hash tag}` so they live in one Cluster slot.
     * @default "pixport:"
     */
    prefix: z.string().max(200).default("pixport:"),
    /**
     * Upper bound of one Redis call in milliseconds; a slower call fails with
     * `STORAGE_UNAVAILABLE`, so a stalled Redis never hangs a request.
     * @default 2000
     */
    commandTimeoutMs: z.number().int().positive().max(600_000).default(2000),
  })
  .strict();

/** Options shared by every Redis adapter; see {@link redisAdapterOptionsSchema}. */
export type RedisAdapterOptions = z.input<typeof redisAdapterOptionsSchema>;
/** {@link RedisAdapterOptions} with the defaults applied. */
export type ResolvedRedisOptions = z.output<typeof redisAdapterOptionsSchema>;

/** Checks a factory's options against `schema`; throws `INVALID_CONFIGURATION` naming each bad field. */
export function parseRedisOptions<Schema extends z.ZodType>(
  schema: Schema,
  options: unknown,
  factory: string,
): z.output<Schema> {
  return parseOptions(schema, options, factory);
}

/** Runs one Redis call with a deadline, translating failures to `STORAGE_UNAVAILABLE`. */
export function createCaller(options: { commandTimeoutMs: number }) {
  const timeoutMs = options.commandTimeoutMs;
  return async function call<T>(action: string, task: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new ImagePipelineError(
              ErrorCodes.STORAGE_UNAVAILABLE,
              `Redis did not answer within ${timeoutMs} ms (${action}).`,
              {
                retryAfterSeconds: 1,
              },
            ),
          ),
        timeoutMs,
      );
    });
    try {
      return await Promise.race([task(), deadline]);
    } catch (error) {
      if (isImagePipelineError(error) || error instanceof TypeError) throw error;
      throw new ImagePipelineError(ErrorCodes.STORAGE_UNAVAILABLE, `Redis is unavailable (${action}).`, {
        cause: error,
        retryAfterSeconds: 1,
      });
    } finally {
      clearTimeout(timer);
    }
  };
}

/** Registers a Lua script once per client (ioredis retries with EVAL after a NOSCRIPT). */
export function defineScript(client: Redis, name: string, numberOfKeys: number, lua: string): void {
  if (typeof (client as unknown as Record<string, unknown>)[name] !== "function") {
    client.defineCommand(name, { numberOfKeys, lua });
  }
}

export type ScriptCall = (...args: (string | number)[]) => Promise<unknown>;

export function script(client: Redis, name: string): ScriptCall {
  const command = (client as unknown as Record<string, ScriptCall>)[name];
  if (command === undefined) throw new TypeError(`Script ${name} is not defined on this client`);
  return command.bind(client);
}
