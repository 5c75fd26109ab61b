/**
 * Gives the process allocator's free memory back to the operating system. Image jobs allocate and
 * free tens of megabytes at a time (a decoded page, a scaled copy, an encoder's buffers), and
 * allocators keep freed memory for reuse: glibc in its arenas, tcmalloc in its page heap. That is
 * right under a steady load and wrong for a host that reads a large image now and then (an OCR
 * host): its resident memory stays at the sum of what every job left behind. The pipeline calls
 * {@link MemoryReleaser.release} once its memory budget has stayed empty (no job running or
 * waiting) for `memoryBudget.releaseAfterIdleMs` after a job of at least
 * `memoryBudget.releaseAfterBytes`, or as soon as it is empty when such a job ran
 * `memoryBudget.releaseAfterJobMs` or longer; `@pixport/allocator` implements it.
 */
export interface MemoryReleaser {
  /** The allocator it releases memory of (`glibc`, `tcmalloc`), or `none` where it does nothing. */
  readonly allocator: string;
  /**
   * Releases what the allocator holds free, off the caller's thread. Resolves when done and never
   * rejects; a call while a release runs shares it.
   */
  release(): Promise<void>;
}
