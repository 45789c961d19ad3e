export * from './scheduler-host';
export * from './scheduler-agent';
