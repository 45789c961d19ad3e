export * from './scheduler-host';
export * from './scheduler-agent';
export * from './model-lease';
export * from './redis-leases';
export * from './sequence-registry';
export { lostStateError } from './sequence-affinity';
export * from './redis-state';
