/** The image operations of the server's OpenAPI document, and the fields of their forms. */
import type { OperationName } from "@pixport/client";

export type JsonSchema = {
  $ref?: string;
  type?: string;
  enum?: unknown[];
  default?: unknown;
  minimum?: number;
  maximum?: number;
  maxLength?: number;
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  anyOf?: JsonSchema[];
  items?: JsonSchema;
};

export interface OperationSpec {
  /** The route's last segment, e.g. `remove-background`. */
  route: string;
  method: OperationName;
  summary: string;
  schema: JsonSchema;
}

export interface Field {
  name: string;
  kind: "number" | "integer" | "enum" | "boolean" | "string" | "json";
  input: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement;
}

function resolveSchema(document: Record<string, any>, schema: JsonSchema | undefined): JsonSchema {
  if (schema?.$ref === undefined) return schema ?? {};
  const name = schema.$ref.split("/").at(-1)!;
  return (document.components?.schemas?.[name] as JsonSchema | undefined) ?? {};
}

/** The image operations the server lists: every `POST /v1/images/{image_id}/<name>` with a JSON body. */
export function operationsOf(document: Record<string, any>): OperationSpec[] {
  const found: OperationSpec[] = [];
  for (const [route, item] of Object.entries(document.paths as Record<string, any>)) {
    const match = /^\/v1\/images\/\{image_id\}\/([a-z-]+)$/.exec(route);
    const post = item.post;
    const body = post?.requestBody?.content?.["application/json"]?.schema;
    if (match === null || body === undefined || match[1] === "signed-url") continue;
    const name = match[1]!;
    found.push({
      route: name,
      method: name.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase()) as OperationName,
      summary: post.summary ?? "",
      schema: resolveSchema(document, body),
    });
  }
  return found;
}

export function kindOf(schema: JsonSchema): Field["kind"] {
  const plain = schema.anyOf?.find((each) => each.type !== "null") ?? schema;
  if (plain.enum !== undefined) return "enum";
  if (plain.type === "integer" || plain.type === "number" || plain.type === "boolean") return plain.type;
  if (plain.type === "string") return "string";
  return "json";
}
