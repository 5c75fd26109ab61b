import type { ImageRecord, KeyKind } from "@pixport/core";
import { compareNewestFirst } from "@pixport/core/adapter-kit";

/** In-memory view of every record: by id, per owner and per stage, the lists in repository order. */
export interface Index {
  byId: Map<string, ImageRecord>;
  byOwner: Map<string, ImageRecord[]>;
  byStage: Map<KeyKind, ImageRecord[]>;
}

export function ownerKey(accountId: string, stage: KeyKind): string {
  return `${stage}\u0000${accountId}`;
}

/** Position of `record` in a list sorted by {@link compareNewestFirst} (binary search). */
function positionOf(sorted: readonly ImageRecord[], record: ImageRecord): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (compareNewestFirst(sorted[middle] as ImageRecord, record) < 0) low = middle + 1;
    else high = middle;
  }
  return low;
}

export function emptyIndex(): Index {
  return { byId: new Map(), byOwner: new Map(), byStage: new Map() };
}

export function addToIndex(index: Index, record: ImageRecord): void {
  removeFromIndex(index, record.id);
  index.byId.set(record.id, record);
  const owner = ownerKey(record.accountId, record.stage);
  const owned = index.byOwner.get(owner) ?? [];
  const staged = index.byStage.get(record.stage) ?? [];
  index.byOwner.set(owner, owned);
  index.byStage.set(record.stage, staged);
  for (const list of [owned, staged]) list.splice(positionOf(list, record), 0, record);
}

export function removeFromIndex(index: Index, id: string): void {
  const existing = index.byId.get(id);
  if (existing === undefined) return;
  index.byId.delete(id);
  for (const list of [
    index.byOwner.get(ownerKey(existing.accountId, existing.stage)),
    index.byStage.get(existing.stage),
  ]) {
    if (list === undefined) continue;
    const position = positionOf(list, existing);
    if (list[position] === existing) list.splice(position, 1);
  }
}
