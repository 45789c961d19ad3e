export * from './backend';
export * from './registry';
export * from './onnxruntime';
export * from './python';
