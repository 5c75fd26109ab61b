/**
 * Mutual exclusion per key, across every process that shares the backend: publish, unpublish and
 * delete of one image run one at a time, so the public copy and the record cannot disagree after
 * any interleaving.
 *
 * Semantics every adapter must keep:
 * - `withLock(key, task)` runs `task` while no other `withLock` of the same key runs, in this
 *   process or another sharing the backend; tasks of different keys run concurrently.
 * - The lock is released when the task settles (also when it throws); the task's result or error
 *   is passed through.
 * - A lock whose holder died is released after at most the adapter's lease time.
 * - Waiting longer than the adapter's wait limit rejects with `STORAGE_UNAVAILABLE` (503, retry).
 */
export interface LockService {
  withLock<T>(key: string, task: () => Promise<T>): Promise<T>;
}
