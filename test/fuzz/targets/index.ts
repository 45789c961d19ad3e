/** The coverage-guided fuzz targets by name: the list (HTTP JSON and binary, gRPC, pbtxt, python frames). */
import path from 'node:path';

export const TARGETS: Readonly<Record<string, string>> = {
  'http-json': path.join(__dirname, 'http-json.ts'),
  'http-binary': path.join(__dirname, 'http-binary.ts'),
  'grpc-infer': path.join(__dirname, 'grpc-infer.ts'),
  'grpc-scan': path.join(__dirname, 'grpc-scan.ts'),
  pbtxt: path.join(__dirname, 'pbtxt.ts'),
  'python-frames': path.join(__dirname, 'python-frames.ts'),
};
