export * from './metrics-server';
export * from './prometheus';
