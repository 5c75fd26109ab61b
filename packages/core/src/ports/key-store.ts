import type { KeyKind } from "../image.js";

/**
 * A stored API key. The key itself is never stored: only its SHA-256 hex digest (`hash`) and a
 * short non-secret display prefix.
 */
export interface ApiKeyRecord {
  /** Stable id of the key (not secret), e.g. for logs and rate-limit buckets. */
  id: string;
  /** SHA-256 of the full key, lowercase hex. Unique. */
  hash: string;
  /** Non-secret start of the key for display, e.g. `test_AbC1`. */
  displayPrefix: string;
  /** `test` or `live`; images created with the key live in the stage of the same name. */
  kind: KeyKind;
  accountId: string;
  /** ISO 8601 UTC. */
  createdAt: string;
  /** Per-key override of the requests-per-minute limit ("higher rate on request"). */
  rateLimitPerMinute?: number | null;
  /** A revoked key authenticates like an unknown one. */
  revoked?: boolean;
}

/**
 * Storage of API keys.
 *
 * - `findByHash` returns `null` for an unknown hash.
 * - `insert` rejects a duplicate `hash` or `id`.
 * - `list` returns every key (no secrets are stored, so this is safe for admin tooling).
 * - `update` changes the mutable fields of the key with that `id` and returns the new record, or
 *   `null` for an unknown id; every process sees the change on its next look-up.
 */
export interface KeyStore {
  findByHash(hash: string): Promise<ApiKeyRecord | null>;
  insert(record: ApiKeyRecord): Promise<void>;
  list(): Promise<ApiKeyRecord[]>;
  update(id: string, patch: ApiKeyRecordPatch): Promise<ApiKeyRecord | null>;
}

/** The mutable fields of a key: its rate-limit override (`null` removes it) and revocation. */
export interface ApiKeyRecordPatch {
  rateLimitPerMinute?: number | null;
  revoked?: boolean;
}
