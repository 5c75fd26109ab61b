#!/usr/bin/env node
import { parseArgs } from "node:util";
import { isImagePipelineError } from "@pixport/core";
import { createFsKeyStore } from "@pixport/storage-fs";
import { dataPaths, startPixportServer } from "./app.js";
import { loadServerConfig } from "./config.js";
import { createApiKey, ensureInitialKey } from "./keys.js";

const HELP = `pixport: the IMG Processing API on sharp and the local filesystem

Usage:
  pixport serve [--config FILE] [--port N] [--host HOST] [--data-dir DIR] [--public-base-url URL]
  pixport keys create --kind test|live --account NAME [--config FILE] [--data-dir DIR]
  pixport keys list [--config FILE] [--data-dir DIR]
  pixport --help

Configuration: defaults < JSON file (--config or PIXPORT_CONFIG) < PIXPORT_* environment < flags.
See README.md for every key.`;

const options = {
  config: { type: "string" },
  port: { type: "string" },
  host: { type: "string" },
  "data-dir": { type: "string" },
  "public-base-url": { type: "string" },
  kind: { type: "string" },
  account: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  if (values.help || positionals.length === 0) {
    console.log(HELP);
    return positionals.length === 0 && !values.help ? 1 : 0;
  }
  const overrides: Record<string, unknown> = {};
  if (values.port !== undefined) overrides.port = Number(values.port);
  if (values.host !== undefined) overrides.host = values.host;
  if (values["data-dir"] !== undefined) overrides.dataDir = values["data-dir"];
  if (values["public-base-url"] !== undefined) overrides.publicBaseUrl = values["public-base-url"];
  const config = await loadServerConfig({
    ...(values.config === undefined ? {} : { file: values.config }),
    overrides,
  });
  const [command, subcommand] = positionals;

  if (command === "serve") {
    const running = await startPixportServer(config);
    const initial = await ensureInitialKey(running.keys);
    console.log(`pixport listening on ${running.url} (data: ${running.config.dataDir})`);
    if (initial !== null) {
      console.log(
        `Created the first API key (test, account "default"). It is shown only once:\n  ${initial.key}`,
      );
    }
    const stop = (signal: string) => {
      console.log(`${signal} received: finishing in-flight requests`);
      running.close().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    };
    process.once("SIGTERM", () => stop("SIGTERM"));
    process.once("SIGINT", () => stop("SIGINT"));
    return -1;
  }

  if (command === "keys") {
    const keys = createFsKeyStore({ root: dataPaths(config.dataDir).keys });
    if (subcommand === "create") {
      if (values.kind !== "test" && values.kind !== "live") {
        console.error("--kind must be test or live");
        return 2;
      }
      if (values.account === undefined) {
        console.error("--account NAME is required");
        return 2;
      }
      const created = await createApiKey(keys, { kind: values.kind, accountId: values.account });
      console.log(created.key);
      console.error(
        `Created ${created.record.kind} key ${created.record.id} for account ${created.record.accountId}; it is shown only once.`,
      );
      return 0;
    }
    if (subcommand === "list") {
      for (const record of await keys.list()) {
        console.log(
          `${record.id}\t${record.kind}\t${record.accountId}\t${record.displayPrefix}…\t${record.createdAt}`,
        );
      }
      return 0;
    }
  }
  console.error(`Unknown command: ${positionals.join(" ")}\n\n${HELP}`);
  return 2;
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (error: unknown) => {
    console.error(isImagePipelineError(error) || error instanceof TypeError ? error.message : error);
    process.exitCode = 1;
  },
);
