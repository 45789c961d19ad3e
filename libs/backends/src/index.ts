export * from './backend';
export * from './model-control';
export * from './custom-metrics';
export * from './memory-usage';
export * from './registry';
export * from './onnxruntime';
export * from './python';
