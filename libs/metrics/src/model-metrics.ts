/**
 * A model config's `model_metrics`: per-model bucket overrides of the histogram families, as
 * Triton core reads them (metric_model_reporter.cc, MetricReporterConfig::ParseConfig).
 *
 *     model_metrics { metric_control [ {
 *       metric_identifier { family: "nv_inference_first_response_histogram_ms" }
 *       histogram_options { buckets: [ 1, 2.5, 10 ] }
 *     } ] }
 */

/** Triton's one customizable family. */
export const FIRST_RESPONSE_HISTOGRAM = 'nv_inference_first_response_histogram_ms';
export const REQUEST_HISTOGRAM = 'nereid_inference_request_duration_ms';
export const QUEUE_HISTOGRAM = 'nereid_inference_queue_duration_ms';
export const COMPUTE_HISTOGRAM = 'nereid_inference_compute_duration_ms';
export const BATCH_SIZE_HISTOGRAM = 'nereid_inference_batch_size';

/** The per-model histogram families whose buckets `model_metrics` may set: Triton's and Nereid's own. */
export const CUSTOMIZABLE_HISTOGRAMS: readonly string[] = [FIRST_RESPONSE_HISTOGRAM, REQUEST_HISTOGRAM, QUEUE_HISTOGRAM, COMPUTE_HISTOGRAM, BATCH_SIZE_HISTOGRAM];

/** `model_metrics` that cannot be applied (the model does not load); the message names the model and family. */
export class ModelMetricsError extends Error {}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The buckets each family takes for this model, by family name. As Triton: a family that is not a
 * per-model histogram (unknown, or a counter, gauge or summary) is ignored with a warning; a later
 * entry for the same family wins; an entry without `histogram_options` gives the family no bucket
 * but +Inf (Triton copies the unset, empty bucket list). Buckets must be finite and strictly
 * increasing (prometheus-cpp refuses unsorted boundaries): else the model does not load.
 */
export function histogramBuckets(model: string, modelMetrics: unknown, warn: (message: string) => void): Map<string, number[]> {
  const out = new Map<string, number[]>();
  if (modelMetrics === undefined || modelMetrics === null) return out;
  const controls = isObject(modelMetrics) ? (modelMetrics.metric_control ?? []) : undefined;
  if (!Array.isArray(controls)) throw new ModelMetricsError(`model_metrics of '${model}' must hold a list 'metric_control'`);
  for (const control of controls) {
    const id = isObject(control) ? control.metric_identifier : undefined;
    const family = isObject(id) && typeof id.family === 'string' ? id.family : '';
    if (!CUSTOMIZABLE_HISTOGRAMS.includes(family)) {
      // Triton's warning, word for word.
      warn(`Metric family '${family}' in 'metric_identifier' is not a customizable metric in Triton core.`);
      continue;
    }
    const options = (control as Json).histogram_options;
    const raw = isObject(options) ? (options.buckets ?? []) : [];
    const buckets = Array.isArray(raw) ? raw.map((b) => (typeof b === 'string' && b.trim() !== '' ? Number(b) : b)) : [raw];
    const valid = buckets.every((b, i) => typeof b === 'number' && Number.isFinite(b) && (i === 0 || b > (buckets[i - 1] as number)));
    if (!valid) {
      throw new ModelMetricsError(
        `model_metrics of '${model}': the buckets of '${family}' must be finite numbers in strictly increasing order, got [${buckets.map(String).join(', ')}]`,
      );
    }
    out.set(family, buckets as number[]);
  }
  return out;
}
