import { describe, expect, it } from "vitest";
import { relativeStackPaths } from "../src/observability.js";

describe("relativeStackPaths", () => {
  const cwd = "/srv/pixport/app";
  it("makes every frame's absolute path relative to the working directory", () => {
    const stack = [
      "Error: boom",
      "    at transform (/srv/pixport/app/node_modules/@pixport/core/dist/index.js:12:5)",
      "    at async handle (file:///srv/pixport/app/packages/http/dist/index.js:40:3)",
      "    at /srv/pixport/app/packages/server/dist/cli.js:7:1",
      "    at run (/opt/other/lib.js:1:2)",
      "    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)",
    ].join("\n");
    expect(relativeStackPaths(stack, cwd).split("\n")).toEqual([
      "Error: boom",
      "    at transform (node_modules/@pixport/core/dist/index.js:12:5)",
      "    at async handle (packages/http/dist/index.js:40:3)",
      "    at packages/server/dist/cli.js:7:1",
      "    at run (../../../opt/other/lib.js:1:2)",
      "    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)",
    ]);
    expect(relativeStackPaths(stack, cwd)).not.toContain("/srv/pixport");
  });

  it("leaves text without frames alone", () => {
    expect(relativeStackPaths("could not read /srv/pixport/app/data/x", cwd)).toBe(
      "could not read /srv/pixport/app/data/x",
    );
  });
});
