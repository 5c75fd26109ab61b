/**
 * Serialises async tasks per key inside this process: a task starts after the previous task of the
 * same key settled. Tasks of different keys run concurrently.
 */
export interface KeyedLock {
  run<T>(key: string, task: () => Promise<T>): Promise<T>;
}

export function createKeyedLock(): KeyedLock {
  const tails = new Map<string, Promise<void>>();
  return {
    run(key, task) {
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
