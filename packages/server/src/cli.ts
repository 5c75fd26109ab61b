#!/usr/bin/env node
import { createRequire } from "node:module";
import { isImagePipelineError } from "@pixport/core";
import { Command, InvalidArgumentError, Option } from "commander";
import { activeAllocator } from "./allocator.js";
import { createConsoleLogger, startPixportServer } from "./app.js";
import { loadServerConfig } from "./config.js";
import { createApiKey, ensureInitialKeys } from "./keys.js";
import { LOG_LEVELS } from "./observability.js";
import { createPixportRuntime, type PixportRuntime } from "./runtime.js";

// The CLI runs on commander (maintained, typed, per-command help and option errors that name the
// flag), instead of the hand-written node:util parseArgs dispatch it replaced.

const { version } = createRequire(import.meta.url)("../package.json") as { version: string };

/** Shared by every command: where the configuration and the data live. */
interface StoreOptions {
  config?: string;
  dataDir?: string;
}

const integer = (name: string, min: number, max: number) => (value: string) => {
  if (!/^-?\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new InvalidArgumentError(
      `${name} must be an integer between ${min} and ${max}, received ${JSON.stringify(value)}`,
    );
  }
  return Number(value);
};

function withStores(command: Command): Command {
  return command
    .option("--config <file>", "JSON config file (also PIXPORT_CONFIG)")
    .option("--data-dir <dir>", "data directory (also PIXPORT_DATA_DIR)");
}

async function configFor(options: StoreOptions, overrides: Record<string, unknown> = {}) {
  if (options.dataDir !== undefined) overrides.dataDir = options.dataDir;
  return loadServerConfig({ ...(options.config === undefined ? {} : { file: options.config }), overrides });
}

/** Runs an admin command on the same stores as the server (the data directory, or Redis). */
async function withRuntime(options: StoreOptions, task: (runtime: PixportRuntime) => Promise<number>) {
  const runtime = await createPixportRuntime(await configFor(options), createConsoleLogger(false));
  try {
    process.exitCode = await task(runtime);
  } finally {
    await runtime.close();
  }
}

const program = new Command("pixport")
  .description("pixport: the IMG Processing API on sharp and the local filesystem")
  .version(version, "-v, --version")
  .addHelpText(
    "after",
    "\nConfiguration: defaults < JSON file (--config or PIXPORT_CONFIG) < PIXPORT_* environment < flags.\nSee docs/configuration.md for every key.",
  )
  .showHelpAfterError("(run with --help for usage)")
  // Usage errors (an unknown flag, a bad value) exit with 2, as before; help and version with 0.
  .exitOverride((error) => {
    process.exit(error.exitCode === 0 ? 0 : 2);
  });

withStores(
  program
    .command("serve")
    .description("start the HTTP server")
    .option("--port <n>", "port (0 picks a free one)", integer("port", 0, 65535))
    .option("--host <host>", "interface to listen on")
    .option("--public-base-url <url>", "URL clients use to reach the API")
    .addOption(new Option("--codec <codec>", "image codec").choices(["sharp", "jimp"]))
    .addOption(new Option("--log-level <level>", "least severe level logged").choices([...LOG_LEVELS])),
).action(
  async (
    options: StoreOptions & {
      port?: number;
      host?: string;
      publicBaseUrl?: string;
      codec?: string;
      logLevel?: string;
    },
  ) => {
    const overrides: Record<string, unknown> = {};
    if (options.port !== undefined) overrides.port = options.port;
    if (options.host !== undefined) overrides.host = options.host;
    if (options.publicBaseUrl !== undefined) overrides.publicBaseUrl = options.publicBaseUrl;
    if (options.codec !== undefined) overrides.codec = options.codec;
    if (options.logLevel !== undefined) overrides.logLevel = options.logLevel;
    const running = await startPixportServer(await configFor(options, overrides));
    const initial = await ensureInitialKeys(running.keys, running.accounts);
    console.log(
      `pixport listening on ${running.url} (data: ${running.config.dataDir}, ${running.ocrEngine === undefined ? "" : `ocr: ${running.ocrEngine}, `}malloc: ${activeAllocator()})`,
    );
    if (initial !== null) {
      // The banner comes last, so the keys are the last thing on the screen.
      console.log(
        [
          "",
          'First start: two API keys for the account "default". They are shown only once. More:',
          "`npx pixport keys create --kind live --account NAME` where pixport is installed from npm,",
          "`npx --yes pnpm@12 pixport keys create --kind live --account NAME` in a checkout:",
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
  },
);

const keys = program.command("keys").description("create, list, limit and revoke API keys");

withStores(
  keys
    .command("create")
    .description("create a key; it is printed once (only its SHA-256 is stored)")
    .addOption(new Option("--kind <kind>", "key kind").choices(["test", "live"]).makeOptionMandatory())
    .requiredOption("--account <name>", "account the key belongs to"),
).action((options: StoreOptions & { kind: "test" | "live"; account: string }) =>
  withRuntime(options, async (runtime) => {
    const created = await createApiKey(runtime.keys, { kind: options.kind, accountId: options.account });
    console.log(created.key);
    console.error(
      `Created ${created.record.kind} key ${created.record.id} for account ${created.record.accountId}; it is shown only once.`,
    );
    return 0;
  }),
);

withStores(
  keys
    .command("list")
    .description("list keys without secrets: id, kind, account, prefix, created, per-minute limit, state"),
).action((options: StoreOptions) =>
  withRuntime(options, async (runtime) => {
    for (const record of await runtime.keys.list()) {
      console.log(
        [
          record.id,
          record.kind,
          record.accountId,
          `${record.displayPrefix}…`,
          record.createdAt,
          record.rateLimitPerMinute == null ? "default" : `${record.rateLimitPerMinute}/min`,
          record.revoked === true ? "revoked" : "active",
        ].join("\t"),
      );
    }
    return 0;
  }),
);

withStores(
  keys
    .command("limit")
    .description("set a key's requests per minute, or go back to the default")
    .requiredOption("--id <keyId>", "key id (see `pixport keys list`)")
    .requiredOption("--per-minute <n|default>", "1 to 9999999, or default", (value: string) => {
      if (value === "default") return value;
      return integer("--per-minute", 1, 9_999_999)(value);
    }),
).action((options: StoreOptions & { id: string; perMinute: number | "default" }) =>
  withRuntime(options, async (runtime) => {
    const updated = await runtime.keys.update(options.id, {
      rateLimitPerMinute: options.perMinute === "default" ? null : options.perMinute,
    });
    if (updated === null) {
      console.error(`No key with id ${options.id}`);
      return 1;
    }
    console.log(`Key ${updated.id}: ${updated.rateLimitPerMinute ?? "default"} requests per minute`);
    return 0;
  }),
);

withStores(
  keys
    .command("revoke")
    .description("revoke a key (answers 401 from then on)")
    .requiredOption("--id <keyId>", "key id (see `pixport keys list`)"),
).action((options: StoreOptions & { id: string }) =>
  withRuntime(options, async (runtime) => {
    const updated = await runtime.keys.update(options.id, { revoked: true });
    if (updated === null) {
      console.error(`No key with id ${options.id}`);
      return 1;
    }
    console.log(`Revoked key ${updated.id}`);
    return 0;
  }),
);

const accounts = program.command("accounts").description("upgrade, downgrade and show accounts");
for (const [name, upgraded] of [
  ["upgrade", true],
  ["downgrade", false],
] as const) {
  withStores(
    accounts
      .command(name)
      .description(upgraded ? "lift the monthly trial cap" : "back to the monthly trial cap")
      .requiredOption("--account <name>", "account name"),
  ).action((options: StoreOptions & { account: string }) =>
    withRuntime(options, async (runtime) => {
      const account = await runtime.accounts.setUpgraded(options.account, upgraded);
      console.log(
        `Account ${account.id}: ${account.upgraded ? "upgraded (no monthly cap)" : "trial (monthly cap)"}`,
      );
      return 0;
    }),
  );
}

withStores(
  accounts
    .command("show")
    .description("show an account's plan and this month's usage")
    .requiredOption("--account <name>", "account name"),
).action((options: StoreOptions & { account: string }) =>
  withRuntime(options, async (runtime) => {
    const { period, images, limit, variants } = await runtime.pipeline.usage(options.account);
    console.log(
      `Account ${options.account}: ${limit === null ? "upgraded" : "trial"}, ${images} images used in ${period}${limit === null ? "" : ` of ${limit}`}`,
    );
    console.log(`Variants computed (delivery cache misses, not billed) in ${period}: ${variants}`);
    return 0;
  }),
);

withStores(
  program.command("sweep").description("remove expired test images and what interrupted writes left behind"),
).action((options: StoreOptions) =>
  withRuntime(options, async (runtime) => {
    const removed = await runtime.pipeline.sweepExpiredTestImages();
    console.log(`Removed ${removed} expired test image${removed === 1 ? "" : "s"}.`);
    const orphans = await runtime.pipeline.sweepOrphans();
    console.log(
      `Removed ${orphans.privateBlobs} orphan blob${orphans.privateBlobs === 1 ? "" : "s"} and took down ${orphans.publicCopies} unpublished public cop${orphans.publicCopies === 1 ? "y" : "ies"} (written over an hour ago).`,
    );
    return 0;
  }),
);

program.parseAsync(process.argv).catch((error: unknown) => {
  console.error(isImagePipelineError(error) || error instanceof TypeError ? error.message : error);
  process.exitCode = 1;
});
