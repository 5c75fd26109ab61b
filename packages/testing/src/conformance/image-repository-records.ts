import type { ImageRecord, ImageRepository, KeyKind } from "@pixport/core";

const BASE_TIME = Date.parse("2026-01-01T00:00:00.000Z");

/** An image id of the accepted shape (`image_` + 24 lowercase letters or digits) built from a number. */
export function conformanceImageId(value: number, prefix = "t"): string {
  return `image_${prefix}${String(value).padStart(23, "0")}`;
}

/** A complete, valid record with predictable fields; `overrides` win. */
export function conformanceImageRecord(overrides: Partial<ImageRecord> & { id: string }): ImageRecord {
  return {
    accountId: "acct_1",
    stage: "test",
    name: `${overrides.id}.png`,
    format: "png",
    width: 10,
    height: 20,
    size: 300,
    createdAt: new Date(BASE_TIME).toISOString(),
    blobKey: `images/${overrides.id}.png`,
    url: null,
    ...overrides,
  };
}

/** An ISO instant `seconds` after the suite's base time. */
export function at(seconds: number): string {
  return new Date(BASE_TIME + seconds * 1000).toISOString();
}

/** The ids of `records`, in order. */
export function ids(records: readonly ImageRecord[]): string[] {
  return records.map((record) => record.id);
}

/** Fisher-Yates with a fixed LCG so insertion order is scrambled the same way on every run. */
export function shuffled<T>(values: readonly T[]): T[] {
  const result = [...values];
  let seed = 42;
  for (let index = result.length - 1; index > 0; index -= 1) {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    const other = seed % (index + 1);
    [result[index], result[other]] = [result[other] as T, result[index] as T];
  }
  return result;
}

/** 25 records of one owner with distinct instants and a few ties, inserted in scrambled order. */
export async function insertOwnedSet(
  repository: ImageRepository,
  stage: KeyKind = "test",
): Promise<ImageRecord[]> {
  const records = Array.from({ length: 25 }, (_, index) =>
    conformanceImageRecord({
      id: conformanceImageId(index, stage === "test" ? "t" : "l"),
      stage,
      // Every fifth record shares its instant with the previous one, to exercise the tie rule.
      createdAt: at(index % 5 === 4 ? index - 1 : index),
    }),
  );
  for (const record of shuffled(records)) await repository.insert(record);
  return [...records].sort((a, b) =>
    a.createdAt !== b.createdAt ? (a.createdAt < b.createdAt ? 1 : -1) : a.id < b.id ? 1 : -1,
  );
}
