/**
 * Writes the committed `packages/http/openapi.json` from the route table (`pnpm openapi`).
 * `test/openapi.test.ts` regenerates it and fails on any difference.
 */
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { renderOpenApiFile } from "../src/openapi-file.js";

const target = fileURLToPath(new URL("../openapi.json", import.meta.url));
writeFileSync(target, renderOpenApiFile());
process.stdout.write(`wrote ${target}\n`);
