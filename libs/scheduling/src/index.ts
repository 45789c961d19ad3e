export * from './scheduler';
export { FakeClock } from './clock';
export { DefaultScheduler } from './default-scheduler';
export { DynamicBatchScheduler } from './dynamic-batch-scheduler';
export { EnsembleScheduler } from './ensemble-scheduler';
export { OrderedDelivery } from './ordered-delivery';
export { batchCompatible, batchRulesOf, formBatch, requestBatchSize } from './batch-former';
export type { BatchDecision, BatchRules } from './batch-former';
export { effectiveTimeoutUs } from './priority-queue';
