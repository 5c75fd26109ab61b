import type {
  ExpiredImagesQuery,
  ImagePage,
  ImageRecord,
  ImageRecordPatch,
  ImageRepository,
  ListImagesQuery,
} from "@pixport/core";
import { definedFields } from "@pixport/core/adapter-kit";
import type { Redis } from "ioredis";
import {
  createCaller,
  defineScript,
  parseRedisOptions,
  type RedisAdapterOptions,
  redisAdapterOptionsSchema,
  type ScriptCall,
  script,
} from "./client.js";

// Insert a record only when its id is new, and index it, in one step.
const INSERT_IMAGE = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], 0, ARGV[2])
redis.call('ZADD', KEYS[3], 0, ARGV[2])
return 1
`;

// Compare-and-set: replace the record only if it is still the version the caller read (the merge
// happens in JavaScript, so no field goes through Lua's cjson). -1: gone, 0: changed, 1: written.
const REPLACE_IMAGE = `
local current = redis.call('GET', KEYS[1])
if not current then return -1 end
if current ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1
`;

// Compare-and-delete: remove the record and its index entries only if it is the version read.
const DELETE_IMAGE = `
local current = redis.call('GET', KEYS[1])
if not current then return -1 end
if current ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
redis.call('ZREM', KEYS[3], ARGV[2])
return 1
`;

/** Attempts of an optimistic update or delete racing other writers of the same record. */
const MAX_CAS_ATTEMPTS = 20;

/**
 * Sort member of a record: `{createdAt in ms, 15 digits}:{id}`. Every member of a sorted set has
 * score 0, so Redis orders them bytewise (ZRANGEBYLEX): ascending is oldest first with ties by id
 * ascending, and ZREVRANGEBYLEX is exactly the repository order, newest first with ties by id
 * descending. The order is total because ids are unique.
 */
export function imageSortMember(record: Pick<ImageRecord, "createdAt" | "id">): string {
  return `${timePart(Date.parse(record.createdAt))}:${record.id}`;
}

function timePart(ms: number): string {
  return String(Math.max(0, Math.trunc(ms))).padStart(15, "0");
}

/**
 * An ImageRepository on Redis, atomic across server processes. Layout (all keys share the hash tag
 * `{images}`, so the Lua scripts are valid on Redis Cluster; image metadata then lives in one slot):
 * - `{prefix}{images}:image:{id}`: the record as JSON;
 * - `{prefix}{images}:owner:{stage}:{accountId}`: sorted set of {@link imageSortMember}, one per
 *   account and stage, for newest-first cursor pages;
 * - `{prefix}{images}:stage:{stage}`: the same members per stage, oldest first, for retention sweeps.
 *
 * Insert and delete change the record and both indexes in one Lua script; update is a
 * compare-and-set of the JSON (the patch never touches `createdAt`, so the indexes stay valid).
 *
 * @example
 * ```ts
 * const images = createRedisImageRepository({ client: new Redis(url), prefix: "app:" });
 * const pipeline = createImagePipeline({ ...deps, images });
 * ```
 */
export function createRedisImageRepository(input: RedisAdapterOptions): ImageRepository {
  const options = parseRedisOptions(redisAdapterOptionsSchema, input, "createRedisImageRepository");
  const { client } = options;
  const call = createCaller(options);
  defineScript(client, "pixportInsertImage", 3, INSERT_IMAGE);
  defineScript(client, "pixportReplaceImage", 1, REPLACE_IMAGE);
  defineScript(client, "pixportDeleteImage", 3, DELETE_IMAGE);
  const state: RepositoryState = {
    client,
    prefix: `${options.prefix}{images}:`,
    insertImage: script(client, "pixportInsertImage"),
    replaceImage: script(client, "pixportReplaceImage"),
    deleteImage: script(client, "pixportDeleteImage"),
  };
  return {
    insert: (record) => call("image insert", () => insertRecord(state, record)),
    get: (id) => call("image look-up", () => getRecord(state, id)),
    update: (id, patch) => call("image update", () => updateRecord(state, id, patch)),
    delete: (id) => call("image delete", () => deleteRecord(state, id)),
    list: (query) => call("image list", () => listPage(state, query)),
    listCreatedBefore: (query) => call("image retention scan", () => listCreatedBefore(state, query)),
  };
}

/** The client, key prefix and scripts of one repository. */
interface RepositoryState {
  readonly client: Redis;
  /** `{prefix}{images}:`, the start of every key. */
  readonly prefix: string;
  readonly insertImage: ScriptCall;
  readonly replaceImage: ScriptCall;
  readonly deleteImage: ScriptCall;
}

const recordKey = (state: RepositoryState, id: string) => `${state.prefix}image:${id}`;
const ownerKey = (state: RepositoryState, record: Pick<ImageRecord, "stage" | "accountId">) =>
  `${state.prefix}owner:${record.stage}:${record.accountId}`;
const stageKey = (state: RepositoryState, stage: string) => `${state.prefix}stage:${stage}`;
const idOf = (member: string) => member.slice(member.indexOf(":") + 1);

async function records(state: RepositoryState, ids: string[]): Promise<ImageRecord[]> {
  if (ids.length === 0) return [];
  const values = await state.client.mget(ids.map((id) => recordKey(state, id)));
  // A record deleted between the index read and this read is simply left out.
  return values.filter((value): value is string => value !== null).map((value) => JSON.parse(value));
}

async function insertRecord(state: RepositoryState, record: ImageRecord): Promise<void> {
  const inserted = await state.insertImage(
    recordKey(state, record.id),
    ownerKey(state, record),
    stageKey(state, record.stage),
    JSON.stringify(record),
    imageSortMember(record),
  );
  if (inserted !== 1) throw new TypeError(`An image with id ${record.id} already exists.`);
}

async function getRecord(state: RepositoryState, id: string): Promise<ImageRecord | null> {
  const value = await state.client.get(recordKey(state, id));
  return value === null ? null : (JSON.parse(value) as ImageRecord);
}

async function updateRecord(
  state: RepositoryState,
  id: string,
  patch: ImageRecordPatch,
): Promise<ImageRecord | null> {
  for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt += 1) {
    const current = await state.client.get(recordKey(state, id));
    if (current === null) return null;
    const updated: ImageRecord = { ...(JSON.parse(current) as ImageRecord), ...definedFields(patch) };
    const result = await state.replaceImage(recordKey(state, id), current, JSON.stringify(updated));
    if (result === -1) return null;
    if (result === 1) return updated;
  }
  throw new Error(`Image ${id} kept changing during ${MAX_CAS_ATTEMPTS} update attempts.`);
}

async function deleteRecord(state: RepositoryState, id: string): Promise<boolean> {
  for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt += 1) {
    const current = await state.client.get(recordKey(state, id));
    if (current === null) return false;
    const record = JSON.parse(current) as ImageRecord;
    const result = await state.deleteImage(
      recordKey(state, id),
      ownerKey(state, record),
      stageKey(state, record.stage),
      current,
      imageSortMember(record),
    );
    if (result === -1) return false;
    if (result === 1) return true;
  }
  throw new Error(`Image ${id} kept changing during ${MAX_CAS_ATTEMPTS} delete attempts.`);
}

async function listPage(state: RepositoryState, query: ListImagesQuery): Promise<ImagePage | null> {
  const { client } = state;
  const owner = ownerKey(state, query);
  let start = "+";
  let before: string[] = [];
  if (query.from !== undefined) {
    const value = await client.get(recordKey(state, query.from));
    if (value === null) return null;
    const cursor = JSON.parse(value) as ImageRecord;
    if (cursor.accountId !== query.accountId || cursor.stage !== query.stage) return null;
    const member = imageSortMember(cursor);
    start = `[${member}`;
    // Up to `take` members just above the cursor (newer), ascending: the last is `previous`.
    before = await client.zrangebylex(owner, `(${member}`, "+", "LIMIT", 0, query.take);
  }
  const members = await client.zrevrangebylex(owner, start, "-", "LIMIT", 0, query.take + 1);
  const page = members.slice(0, query.take);
  const after = members[query.take];
  return {
    items: await records(state, page.map(idOf)),
    next: after === undefined ? null : idOf(after),
    previous: before.length === 0 ? null : idOf(before[before.length - 1]!),
  };
}

async function listCreatedBefore(state: RepositoryState, query: ExpiredImagesQuery): Promise<ImageRecord[]> {
  const cutoff = Date.parse(query.createdBefore);
  // Members of instant `cutoff` are `{cutoff}:{id}`, which sort after `{cutoff}`: excluded.
  const members = await state.client.zrangebylex(
    stageKey(state, query.stage),
    "-",
    `(${timePart(cutoff)}`,
    "LIMIT",
    0,
    query.limit,
  );
  return records(state, members.map(idOf));
}
