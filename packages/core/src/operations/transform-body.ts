import { z } from "zod";
import { type ValidationIssue, validationError } from "../errors.js";
import {
  formatIssues,
  MAX_TRANSFORM_STEPS,
  TRANSFORM_STEP_OPS,
  type TransformStepOp,
  transformSchema,
} from "../schemas.js";
import { OPERATIONS } from "./transform-steps.js";

/** The validated steps of a fused transform, each with its operation's output type. */
export type ParsedStep = {
  [K in TransformStepOp]: { op: K; index: number; body: z.output<(typeof OPERATIONS)[K]["schema"]> };
}[TransformStepOp];

/**
 * Validates a fused transform's body step by step, so every error names its step: `steps.1.op`,
 * `steps.0.width`. `name` is given once, at the top level, not per step.
 */
export function parseTransformBody(body: unknown): { name: string | undefined; steps: ParsedStep[] } {
  const issues: ValidationIssue[] = [];
  const value = (body === undefined ? {} : body) as Record<string, unknown>;
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw validationError([{ path: "body", message: "must be a JSON object" }]);
  }
  let name: string | undefined;
  const named = z.object({ name: transformSchema.shape.name }).safeParse({ name: value.name });
  if (named.success) name = named.data.name;
  else issues.push(...formatIssues(named.error.issues));
  const steps: ParsedStep[] = [];
  const raw = value.steps;
  if (!Array.isArray(raw) || raw.length < 1 || raw.length > MAX_TRANSFORM_STEPS) {
    issues.push({
      path: "steps",
      message: raw === undefined ? "is required" : `must be an array of 1 to ${MAX_TRANSFORM_STEPS} steps`,
    });
    throw validationError(issues);
  }
  for (const [index, step] of raw.entries()) {
    const at = (path: string) => `steps.${index}.${path}`;
    if (typeof step !== "object" || step === null || Array.isArray(step)) {
      issues.push({ path: `steps.${index}`, message: "must be an object with an op" });
      continue;
    }
    const { op, ...fields } = step as Record<string, unknown>;
    if (typeof op !== "string" || !TRANSFORM_STEP_OPS.includes(op as TransformStepOp)) {
      issues.push({
        path: at("op"),
        message: op === undefined ? "is required" : `must be one of: ${TRANSFORM_STEP_OPS.join(", ")}`,
      });
      continue;
    }
    if (fields.name !== undefined) {
      issues.push({
        path: at("name"),
        message: "is not allowed in a step; name the result at the top level",
      });
      continue;
    }
    const parsed = OPERATIONS[op as TransformStepOp].schema.safeParse(fields);
    if (!parsed.success) {
      issues.push(...formatIssues(parsed.error.issues).map((issue) => ({ ...issue, path: at(issue.path) })));
      continue;
    }
    steps.push({ op, index, body: parsed.data } as ParsedStep);
  }
  if (issues.length > 0) throw validationError(issues);
  return { name, steps };
}
