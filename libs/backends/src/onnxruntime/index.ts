export { OnnxRuntimeBackend } from './onnxruntime-backend';
export { autoCompleteFromOnnx } from './auto-complete';
export { readOnnxModelInfo, type OnnxModelInfo, type OnnxValueInfo } from './onnx-model-info';
export { SESSION_THREAD_PARAMETER, type SessionThread } from './session-options';
