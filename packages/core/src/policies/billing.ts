import type { KeyKind } from "../image.js";
import {
  type BilledOperationId,
  isOperationId,
  OPERATION_IDS,
  OPERATIONS_TABLE,
} from "../operations/table.js";

/**
 * Operations whose success counts toward usage, and how many processed images each counts
 * (contract section 3 and P8), from the operations table.
 */
export const BILLING_UNITS: Readonly<Record<BilledOperationId, number>> = Object.fromEntries(
  OPERATION_IDS.flatMap((id) => {
    const row = OPERATIONS_TABLE[id];
    return "billing" in row ? [[id, row.billing]] : [];
  }),
) as Record<BilledOperationId, number>;

/**
 * Processed images billed for one successful call: the operation's units for live keys, 0 for test
 * keys (test keys never count toward the quota) and for operations that do not bill (get, list,
 * delete, download) or ids that are not operations (a route of your own).
 */
export function billedUnits(operationId: string, keyKind: KeyKind): number {
  if (keyKind === "test" || !isOperationId(operationId)) return 0;
  const row = OPERATIONS_TABLE[operationId];
  return "billing" in row ? row.billing : 0;
}
