export * from './backend';
export * from './custom-metrics';
export * from './registry';
export * from './onnxruntime';
export * from './python';
