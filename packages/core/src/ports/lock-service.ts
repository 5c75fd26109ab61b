/**
 * Mutual exclusion per key, across every process that shares the backend: publish, unpublish and
 * delete of one image run one at a time, so the public copy and the record cannot disagree after
 * any interleaving.
 *
 * Semantics every adapter must keep:
 * - `withLock(key, task)` runs `task` while no other `withLock` of the same key runs, in this
 *   process or another sharing the backend; tasks of different keys run concurrently.
 *   Keys are compared as whole strings: no key's lock covers another's (`img` and `img2`).
 * - The lock is released when the task settles (also when it throws, even before returning its
 *   promise); the task's result or error is passed through unchanged.
 * - A lock whose holder died is released after at most the adapter's lease time; a live holder
 *   keeps its lock for as long as its task runs, past the lease (an adapter whose locks die with
 *   their process has no lease).
 * - Waiting longer than the adapter's wait limit rejects with `STORAGE_UNAVAILABLE` (503, retry),
 *   and the waiter's task never runs. An adapter may have no wait limit: its waiters wait as long
 *   as the holder runs.
 * - Not re-entrant: a task that takes its own key again waits for itself.
 * - No order among waiters is promised.
 */
export interface LockService {
  withLock<T>(key: string, task: () => Promise<T>): Promise<T>;
}
