// The prebuilt pixport server for bench/fair-uploads.mjs: default upload limits, one upgraded live
// key ("KEY") and
// PIXPORT_BENCH_TRIAL_ACCOUNTS trial accounts with one live key each ("TRIAL_KEYS").
import { createApiKey, resolveServerConfig, startPixportServer } from "@pixport/server";
import { reportPeakRss } from "./lib.mjs";

reportPeakRss();

const running = await startPixportServer(
  resolveServerConfig({
    port: 0,
    host: "127.0.0.1",
    dataDir: process.argv[2],
    log: false,
    policies: { liveRequestsPerMinute: 1_000_000_000 },
  }),
);
await running.accounts.setUpgraded("bench", true);
const { key } = await createApiKey(running.keys, { kind: "live", accountId: "bench" });
const trial = [];
for (let index = 0; index < Number(process.env.PIXPORT_BENCH_TRIAL_ACCOUNTS ?? 0); index++) {
  trial.push((await createApiKey(running.keys, { kind: "live", accountId: `trial-${index}` })).key);
}
console.log(`KEY ${key}`);
console.log(`TRIAL_KEYS ${trial.join(",")}`);
console.log(`listening on ${running.url}`);
process.on("SIGTERM", () => running.close().then(() => process.exit(0)));
