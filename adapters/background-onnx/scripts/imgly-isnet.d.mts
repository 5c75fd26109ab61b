/** Path of the IS-Net model reassembled from `@imgly/background-removal-data` (test-only, AGPL). */
export function imglyIsnetModelPath(variant?: "small" | "medium"): string;
