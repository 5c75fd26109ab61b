import { OPERATIONS_TABLE, type OperationId } from "@pixport/core";
import { describe, expect, it } from "vitest";
import { defaultRoutes } from "../src/index.js";

const isOperationId = (id: string): id is OperationId => Object.hasOwn(OPERATIONS_TABLE, id);

describe("the HTTP route table and the core's operations table", () => {
  it("serves every operation at exactly the routes of its row, and nothing else", () => {
    const served = new Map<string, string[]>();
    for (const route of defaultRoutes) {
      if (route.operationId === "getOpenApiDocument") continue;
      expect(isOperationId(route.operationId)).toBe(true);
      served.set(route.operationId, [
        ...(served.get(route.operationId) ?? []),
        `${route.method} ${route.path}`,
      ]);
    }
    for (const [id, row] of Object.entries(OPERATIONS_TABLE)) {
      expect([id, served.get(id)?.sort()]).toEqual([id, [...row.routes].sort()]);
    }
    expect(served.size).toBe(Object.keys(OPERATIONS_TABLE).length);
  });

  it("documents each JSON body with its operation's schema, the one that validates it", () => {
    for (const route of defaultRoutes) {
      if (route.body !== "json" || !isOperationId(route.operationId)) continue;
      const row = OPERATIONS_TABLE[route.operationId];
      expect([route.operationId, route.bodySchema === row.schema]).toEqual([route.operationId, true]);
    }
  });
});
