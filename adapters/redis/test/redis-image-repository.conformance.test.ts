import { randomUUID } from "node:crypto";
import type { ImageRepository } from "@pixport/core";
import {
  conformanceImageId,
  conformanceImageRecord,
  describeImageRepositoryConformance,
} from "@pixport/testing";
import { describe, expect, it } from "vitest";
import { createRedisImageRepository, imageSortMember } from "../src/index.js";
import { useRedisServer } from "./redis-setup.js";

const { connect } = useRedisServer();

// Every test gets its own key prefix; `peer` is a second connection (another process) on it.
const prefixes = new WeakMap<ImageRepository, string>();
describeImageRepositoryConformance({
  name: "redis",
  create: async () => {
    const prefix = `t${randomUUID()}:`;
    const repository = createRedisImageRepository({ client: await connect(), prefix });
    prefixes.set(repository, prefix);
    return repository;
  },
  peer: async (repository) =>
    createRedisImageRepository({ client: await connect(), prefix: prefixes.get(repository)! }),
});

describe("redis image repository layout", () => {
  it("keeps one JSON key per record and one lexicographic sorted set per owner and per stage", async () => {
    const client = await connect();
    const prefix = `t${randomUUID()}:`;
    const repository = createRedisImageRepository({ client, prefix });
    const record = conformanceImageRecord({ id: conformanceImageId(1), accountId: "acct_x", stage: "live" });
    await repository.insert(record);
    expect(JSON.parse((await client.get(`${prefix}{images}:image:${record.id}`))!)).toEqual(record);
    const member = imageSortMember(record);
    expect(member).toBe(`00${Date.parse(record.createdAt)}:${record.id}`);
    expect(await client.zrange(`${prefix}{images}:owner:live:acct_x`, 0, -1, "WITHSCORES")).toEqual([
      member,
      "0",
    ]);
    expect(await client.zrange(`${prefix}{images}:stage:live`, 0, -1)).toEqual([member]);
    expect(await repository.delete(record.id)).toBe(true);
    expect(await client.keys(`${prefix}*`)).toEqual([]);
  });

  it("updates one record from many connections at once without losing the record or its indexes", async () => {
    const prefix = `t${randomUUID()}:`;
    const repositories = await Promise.all(
      [1, 2, 3].map(async () => createRedisImageRepository({ client: await connect(), prefix })),
    );
    const record = conformanceImageRecord({ id: conformanceImageId(2) });
    await repositories[0]!.insert(record);
    const urls = Array.from({ length: 12 }, (_, index) => `https://cdn.example.com/${index}.png`);
    await Promise.all(urls.map((url, index) => repositories[index % 3]!.update(record.id, { url })));
    const stored = await repositories[1]!.get(record.id);
    expect(urls).toContain(stored?.url);
    const page = await repositories[2]!.list({ accountId: record.accountId, stage: record.stage, take: 10 });
    expect(page?.items).toEqual([stored]);
  });
});
