import type { LockService } from "../ports/lock-service.js";

/**
 * A LockService for one process: tasks of one key run one after another (first come, first
 * served), tasks of different keys concurrently. No lease (its locks die with the process) and no
 * wait limit (a waiter waits as long as the holder runs). The default of `createImagePipeline`; several
 * processes sharing storage need a shared one (e.g. `@pixport/redis`'s `createRedisLockService`).
 *
 * @example
 * ```ts
 * const locks = createMemoryLockService();
 * await locks.withLock("image_x", async () => publishOnce());
 * ```
 */
export function createMemoryLockService(): LockService {
  const tails = new Map<string, Promise<void>>();
  return {
    withLock(key, task) {
      const previous = tails.get(key) ?? Promise.resolve();
      const current = previous.then(task);
      const tail = current.then(
        () => undefined,
        () => undefined,
      );
      tails.set(key, tail);
      void tail.then(() => {
        if (tails.get(key) === tail) tails.delete(key);
      });
      return current;
    },
  };
}
