/** Source of the current time. Inject a fixed or stepping clock in tests instead of sleeping. */
export interface Clock {
  /** The current instant. */
  now(): Date;
}

/** The wall clock. */
export const systemClock: Clock = { now: () => new Date() };
