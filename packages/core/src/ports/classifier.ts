import type { ModelCallOptions, ModelImage, ModelProvider } from "./vision-model.js";

/** One label and its score in 0..1. */
export interface ScoredLabel {
  label: string;
  score: number;
}

/** The answer of `POST /v1/images/{id}/classify` (contract 5.20). */
export interface Classification {
  main_label: string;
  /** 0..1 */
  main_score: number;
  /** Exactly 4 entries, scores in 0..1. */
  secondary_labels: ScoredLabel[];
}

/**
 * Image classification. Resolves a validated {@link Classification} (labels non-empty, scores in
 * 0..1, exactly 4 secondary labels) with only its fields (anything else the model adds is
 * dropped); a schema-invalid answer is `MODEL_BAD_RESPONSE`. Image handling, other errors and
 * aborts as for {@link VisionModel}. Test keys never reach a classifier (the core answers the masked P9
 * result).
 */
export interface Classifier extends ModelProvider {
  classify(
    request: { model: string; image: ModelImage },
    options?: ModelCallOptions,
  ): Promise<Classification>;
}
