export * from './scheduler-host';
