export * from './custom-metrics';
export * from './metrics-config';
export * from './nereid-metrics';
export * from './stats-port';
export * from './cluster-metrics';
export * from './model-metrics';
export * from './gpu-metrics';
