import type { LambdaHttpEvent, LambdaHttpResult } from "@pixport/http-lambda";
import { configFromEnv, createHandler } from "./create-handler.js";

// Built once per cold start, reused by every invocation of the instance.
const ready = createHandler(configFromEnv(process.env));

/** The function's entry point (`Handler: handler.handler` in template.yaml). */
export async function handler(event: LambdaHttpEvent): Promise<LambdaHttpResult> {
  return (await ready)(event);
}
