export * from './grpc-server';
export * from './grpc-status';
export * from './proto-loader';
export { decodeInferRequest, type DecodedInferRequest } from './infer-request';
export { encodeInferResponse } from './infer-response';
