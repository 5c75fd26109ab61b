import type { KeyKind } from "../image.js";
import { OPERATIONS_TABLE } from "../operations/table.js";

/**
 * Operations whose success counts toward usage, and how many processed images each counts
 * (contract section 3 and P8), from the operations table.
 */
export const BILLING_UNITS: Readonly<Record<string, number>> = Object.fromEntries(
  Object.entries(OPERATIONS_TABLE)
    .filter(([, row]) => row.billing > 0)
    .map(([id, row]) => [id, row.billing]),
);

/**
 * Processed images billed for one successful call: the operation's units for live keys, 0 for test
 * keys (test keys never count toward the quota) and for operations that do not bill (get, list,
 * delete, download).
 */
export function billedUnits(operationId: string, keyKind: KeyKind): number {
  if (keyKind === "test") return 0;
  return BILLING_UNITS[operationId] ?? 0;
}
