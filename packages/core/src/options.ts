import type { z } from "zod";
import { ErrorCodes, ImagePipelineError } from "./errors.js";

/**
 * Parses the options of a factory once, at construction, with their zod schema. Failures throw
 * `INVALID_CONFIGURATION` naming every bad path (`what` names the factory or component; `hint`,
 * when given, says how to fix it); the error's `issues` carry each path and message.
 */
export function parseOptions<Schema extends z.ZodType>(
  schema: Schema,
  options: unknown,
  what: string,
  hint?: string,
): z.output<Schema> {
  const parsed = schema.safeParse(options);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((issue) => ({
    path: issue.path.length === 0 ? "options" : issue.path.join("."),
    message: issue.message,
  }));
  const paths = issues.map((issue) => `${issue.path}: ${issue.message}`).join("; ");
  throw new ImagePipelineError(
    ErrorCodes.INVALID_CONFIGURATION,
    `Invalid ${what} options (${paths}).${hint === undefined ? "" : ` ${hint}`}`,
    { issues },
  );
}
