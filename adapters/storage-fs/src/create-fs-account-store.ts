import path from "node:path";
import { type AccountRecord, type AccountStore, ErrorCodes, ImagePipelineError } from "@pixport/core";
import { z } from "zod";
import { type FsPromises, writeFileAtomic } from "./atomic-write.js";
import { isMissing, withStorageErrors } from "./fs-errors.js";
import { createKeyedLock } from "./keyed-lock.js";
import { defaultFs, fsSchema, parseFsOptions, rootSchema } from "./options.js";

/** Options of {@link createFsAccountStore}. */
export const fsAccountStoreOptionsSchema = z.object({
  /** Directory that holds `accounts.json`; created on the first write. */
  root: rootSchema,
  /** The `node:fs/promises` functions to use; for fault-injection tests. @default node:fs/promises */
  fs: fsSchema.optional(),
});

export type FsAccountStoreOptions = z.input<typeof fsAccountStoreOptionsSchema>;

const accountsFileSchema = z.object({
  accounts: z.array(z.object({ id: z.string(), upgraded: z.boolean() })),
});

/**
 * An AccountStore on the local filesystem: every account in `<root>/accounts.json`, replaced
 * crash-safely on each change. Reads re-read the file when it changed (one `open` + `fstat` per
 * call), so a flag set by the CLI in another process is seen by the server's next request. Writes
 * are serialised within a process; let one admin process change accounts at a time.
 *
 * @example
 * ```ts
 * const accounts = createFsAccountStore({ root: "/var/lib/pixport/accounts" });
 * await accounts.setUpgraded("acme", true);
 * ```
 */
export function createFsAccountStore(options: FsAccountStoreOptions): AccountStore {
  const parsed = parseFsOptions(fsAccountStoreOptionsSchema, options, "createFsAccountStore");
  const root = path.resolve(parsed.root);
  const filePath = path.join(root, "accounts.json");
  const fs: FsPromises = parsed.fs ?? defaultFs;
  const lock = createKeyedLock();
  let snapshot: { inode: number | null; size: number; accounts: Map<string, AccountRecord> } | undefined;

  async function read() {
    let handle: Awaited<ReturnType<FsPromises["open"]>>;
    try {
      handle = await fs.open(filePath, "r");
    } catch (error) {
      if (!isMissing(error)) throw error;
      snapshot = { inode: null, size: 0, accounts: new Map() };
      return snapshot;
    }
    try {
      const info = await handle.stat();
      if (snapshot !== undefined && snapshot.inode === info.ino && snapshot.size === info.size)
        return snapshot;
      let accounts: AccountRecord[];
      try {
        accounts = accountsFileSchema.parse(JSON.parse(await handle.readFile("utf8"))).accounts;
      } catch (error) {
        throw new ImagePipelineError(ErrorCodes.INTERNAL, "The account file accounts.json is corrupt.", {
          cause: error,
        });
      }
      snapshot = {
        inode: info.ino,
        size: info.size,
        accounts: new Map(accounts.map((account) => [account.id, account])),
      };
      return snapshot;
    } finally {
      await handle.close();
    }
  }

  return {
    get(accountId) {
      return withStorageErrors("reading accounts", async () => {
        const account = (await read()).accounts.get(accountId);
        return account === undefined ? null : { ...account };
      });
    },
    setUpgraded(accountId, upgraded) {
      return withStorageErrors("storing an account", () =>
        lock.run("accounts", async () => {
          const accounts = new Map((await read()).accounts);
          const account: AccountRecord = { id: accountId, upgraded };
          accounts.set(accountId, account);
          await fs.mkdir(root, { recursive: true });
          await writeFileAtomic(
            fs,
            filePath,
            `${JSON.stringify({ accounts: [...accounts.values()] }, null, 2)}\n`,
          );
          return { ...account };
        }),
      );
    },
  };
}
