export * from './backend';
export * from './registry';
export * from './ensemble';
export * from './onnxruntime';
export * from './python';
