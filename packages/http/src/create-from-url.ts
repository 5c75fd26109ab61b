import { type Image, parseAll, validationError } from "@pixport/core";
import { z } from "zod";

/** Body of `POST /v1/images` (JSON): create an image from a URL. */
export const createImageFromUrlSchema = z.object({
  name: z
    .string({ error: (issue) => (issue.input === undefined ? "is required" : "must be a string") })
    .min(1, "must be between 1 and 30 characters long")
    .max(30, "must be between 1 and 30 characters long"),
  url: z
    .string({ error: (issue) => (issue.input === undefined ? "is required" : "must be a string") })
    .max(4096, "must be at most 4096 characters long"),
});

/**
 * Create-from-URL. Importing needs a safe fetcher and an origin policy, which this version of the
 * server does not ship yet, so after validating the body every URL is refused with a 422 on `url`
 * that says so (never a network request).
 */
export async function createImageFromUrl(body: unknown): Promise<Image> {
  parseAll([[createImageFromUrlSchema, body === undefined ? {} : body]] as const);
  throw validationError([
    { path: "url", message: "cannot be imported: creating images from URLs is not enabled on this server" },
  ]);
}
