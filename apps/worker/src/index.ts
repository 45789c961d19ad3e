export * from './worker-host';
export * from './wire-requests';
export * from './cluster-models';
export * from './worker-agent';
export * from './worker-control';
export * from './batch-fences';
