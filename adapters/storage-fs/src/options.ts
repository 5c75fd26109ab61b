import * as nodeFs from "node:fs/promises";
import type { Logger } from "@pixport/core";
import { parseOptions } from "@pixport/core/adapter-kit";
import { z } from "zod";
import { FS_FUNCTIONS, type FsPromises } from "./atomic-write.js";

/** `root`: the storage directory, created on first use when missing. */
export const rootSchema = z
  .string()
  .min(1, "expected a non-empty directory path")
  .refine((value) => !value.includes("\u0000"), "expected a path without NUL characters");

/** `fs`: an object with the `node:fs/promises` functions the adapters call. */
export const fsSchema = z.custom<FsPromises>(
  (value) =>
    typeof value === "object" &&
    value !== null &&
    FS_FUNCTIONS.every((name) => typeof (value as Record<string, unknown>)[name] === "function"),
  { message: `expected an object with the node:fs/promises functions ${FS_FUNCTIONS.join(", ")}` },
);

/** `logger`: an object whose optional methods are functions. */
export const loggerSchema = z.custom<Logger>(
  (value) =>
    typeof value === "object" &&
    value !== null &&
    (["debug", "info", "warn", "error"] as const).every((level) => {
      const method = (value as Record<string, unknown>)[level];
      return method === undefined || typeof method === "function";
    }),
  { message: "expected a Logger (an object with optional debug, info, warn and error functions)" },
);

/** The real module, typed as the subset the adapters use. */
export const defaultFs: FsPromises = nodeFs;

/** `parseOptions` of `@pixport/core` with the fs adapters' hint. */
export function parseFsOptions<Schema extends z.ZodType>(
  schema: Schema,
  options: unknown,
  factory: string,
): z.output<Schema> {
  return parseOptions(schema, options, factory, 'Pass an object such as { root: "/var/lib/pixport" }.');
}
