#!/usr/bin/env node
import { parseArgs } from "node:util";
import { isImagePipelineError, quotaPeriod } from "@pixport/core";
import { createConsoleLogger, startPixportServer } from "./app.js";
import { loadServerConfig } from "./config.js";
import { createApiKey, ensureInitialKeys } from "./keys.js";
import { createPixportRuntime, type PixportRuntime } from "./runtime.js";

const HELP = `pixport: the IMG Processing API on sharp and the local filesystem

Usage:
  pixport serve [--config FILE] [--port N] [--host HOST] [--data-dir DIR] [--public-base-url URL]
                [--codec sharp|jimp] [--log-level fatal|error|warn|info|debug|trace|silent]
  pixport keys create --kind test|live --account NAME [--config FILE] [--data-dir DIR]
  pixport keys list [--config FILE] [--data-dir DIR]
  pixport keys limit --id KEY_ID --per-minute N|default [--config FILE] [--data-dir DIR]
  pixport keys revoke --id KEY_ID [--config FILE] [--data-dir DIR]
  pixport accounts upgrade|downgrade --account NAME [--config FILE] [--data-dir DIR]
  pixport accounts show --account NAME [--config FILE] [--data-dir DIR]
  pixport sweep [--config FILE] [--data-dir DIR]
  pixport --help

Configuration: defaults < JSON file (--config or PIXPORT_CONFIG) < PIXPORT_* environment < flags.
See README.md for every key.`;

const options = {
  config: { type: "string" },
  port: { type: "string" },
  host: { type: "string" },
  "data-dir": { type: "string" },
  "public-base-url": { type: "string" },
  codec: { type: "string" },
  "log-level": { type: "string" },
  kind: { type: "string" },
  account: { type: "string" },
  id: { type: "string" },
  "per-minute": { type: "string" },
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
  if (values.codec !== undefined) overrides.codec = values.codec;
  if (values["log-level"] !== undefined) overrides.logLevel = values["log-level"];
  const config = await loadServerConfig({
    ...(values.config === undefined ? {} : { file: values.config }),
    overrides,
  });
  const [command, subcommand] = positionals;

  if (command === "serve") {
    const running = await startPixportServer(config);
    const initial = await ensureInitialKeys(running.keys, running.accounts);
    console.log(`pixport listening on ${running.url} (data: ${running.config.dataDir})`);
    if (initial !== null) {
      // The banner comes last, so the keys are the last thing on the screen.
      console.log(
        [
          "",
          'First start: two API keys for the account "default". They are shown only once',
          "(`pixport keys create` makes more):",
          "  live key: no monthly cap (you own this server), 100 requests a minute; use this one",
          `    ${initial.live.key}`,
          "  test key: 10 requests a minute, images carry a TEST mark and are kept 90 days",
          `    ${initial.test.key}`,
          "",
        ].join("\n"),
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

  if (command === "keys" || command === "accounts" || command === "sweep") {
    // Admin commands work on the same stores as the server (the data directory, or Redis).
    const runtime = await createPixportRuntime(config, createConsoleLogger(false));
    try {
      return await admin(runtime, command, subcommand, values);
    } finally {
      await runtime.close();
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

async function admin(
  runtime: PixportRuntime,
  command: string,
  subcommand: string | undefined,
  values: { kind?: string; account?: string; id?: string; "per-minute"?: string },
): Promise<number> {
  if (command === "sweep") {
    const removed = await runtime.pipeline.sweepExpiredTestImages();
    console.log(`Removed ${removed} expired test image${removed === 1 ? "" : "s"}.`);
    const orphans = await runtime.pipeline.sweepOrphans();
    console.log(
      `Removed ${orphans.privateBlobs} orphan blob${orphans.privateBlobs === 1 ? "" : "s"} and took down ${orphans.publicCopies} unpublished public cop${orphans.publicCopies === 1 ? "y" : "ies"} (written over an hour ago).`,
    );
    return 0;
  }
  if (command === "keys" && subcommand === "list") {
    for (const record of await runtime.keys.list()) {
      console.log(
        `${record.id}\t${record.kind}\t${record.accountId}\t${record.displayPrefix}…\t${record.createdAt}`,
      );
    }
    return 0;
  }
  if (command === "keys" && (subcommand === "limit" || subcommand === "revoke")) {
    if (values.id === undefined) {
      console.error("--id KEY_ID is required (see `pixport keys list`)");
      return 2;
    }
    let patch: { rateLimitPerMinute?: number | null; revoked?: boolean } = { revoked: true };
    if (subcommand === "limit") {
      const perMinute = values["per-minute"];
      if (perMinute !== "default" && !/^[1-9][0-9]{0,6}$/.test(perMinute ?? "")) {
        console.error("--per-minute must be a whole number from 1 to 9999999, or default");
        return 2;
      }
      patch = { rateLimitPerMinute: perMinute === "default" ? null : Number(perMinute) };
    }
    const updated = await runtime.keys.update(values.id, patch);
    if (updated === null) {
      console.error(`No key with id ${values.id}`);
      return 1;
    }
    console.log(
      subcommand === "revoke"
        ? `Revoked key ${updated.id}`
        : `Key ${updated.id}: ${updated.rateLimitPerMinute ?? "default"} requests per minute`,
    );
    return 0;
  }
  if (values.account === undefined) {
    console.error("--account NAME is required");
    return 2;
  }
  if (command === "keys" && subcommand === "create") {
    if (values.kind !== "test" && values.kind !== "live") {
      console.error("--kind must be test or live");
      return 2;
    }
    const created = await createApiKey(runtime.keys, { kind: values.kind, accountId: values.account });
    console.log(created.key);
    console.error(
      `Created ${created.record.kind} key ${created.record.id} for account ${created.record.accountId}; it is shown only once.`,
    );
    return 0;
  }
  if (command === "accounts" && (subcommand === "upgrade" || subcommand === "downgrade")) {
    const account = await runtime.accounts.setUpgraded(values.account, subcommand === "upgrade");
    console.log(
      `Account ${account.id}: ${account.upgraded ? "upgraded (no monthly cap)" : "trial (monthly cap)"}`,
    );
    return 0;
  }
  if (command === "accounts" && subcommand === "show") {
    const account = await runtime.accounts.get(values.account);
    const period = quotaPeriod(runtime.pipeline.context.clock.now());
    const used = await runtime.quota.usage(values.account, period);
    console.log(
      `Account ${values.account}: ${account?.upgraded ? "upgraded" : "trial"}, ${used} images used in ${period}`,
    );
    return 0;
  }
  console.error(`Unknown command: ${[command, subcommand].filter(Boolean).join(" ")}\n\n${HELP}`);
  return 2;
}
