export * from './worker-host';
