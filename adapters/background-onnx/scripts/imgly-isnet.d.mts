/** Path of the IS-Net model reassembled from `@imgly/background-removal-data` (test-only, AGPL; a benchmark peer in bench/peers). */
export function imglyIsnetModelPath(variant?: "small" | "medium"): string;
/** Why the model cannot be built here (its package is not installed), or undefined when it can. */
export function imglyIsnetMissing(): string | undefined;
