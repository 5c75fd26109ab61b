/**
 * Body schema of `POST /v1/images` (JSON `{name, url}`). The operation itself, with the origin
 * policy and the fetcher, is the core's `createImageFromUrl`; the schema lives there too and is
 * re-exported here for the route table and the OpenAPI document.
 */
export { createImageFromUrlSchema } from "@pixport/core/internal";
