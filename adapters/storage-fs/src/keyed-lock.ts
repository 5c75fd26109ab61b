import { createMemoryLockService } from "@pixport/core";

/**
 * Serialises async tasks per key inside this process: a task starts after the previous task of the
 * same key settled. Tasks of different keys run concurrently.
 */
export interface KeyedLock {
  run<T>(key: string, task: () => Promise<T>): Promise<T>;
}

export function createKeyedLock(): KeyedLock {
  // The same per-key queue as the core's in-process LockService: one implementation.
  const locks = createMemoryLockService();
  return { run: (key, task) => locks.withLock(key, task) };
}
