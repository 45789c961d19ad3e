import * as fs from 'node:fs';
import * as path from 'node:path';
import { loadPackageDefinition, type GrpcObject, type ServiceDefinition } from '@grpc/grpc-js';
import { loadSync, type Options } from '@grpc/proto-loader';

/**
 * How the .proto files are turned into JS objects (server and clients use the same options):
 * - keepCase: field names exactly as in the proto (`model_name`, `raw_input_contents`), which is
 *   also the ModelConfig JSON form the core produces.
 * - longs: String: int64/uint64 decode exactly (sequence ids, statistics) without Long objects on
 *   the request path; shapes are parsed with Number(). Encoding accepts numbers and strings.
 * - enums: String: enum values by name (`KIND_CPU`, `SERVING`), as in the config JSON.
 * - defaults: true: absent fields decode to their defaults ('' / 0 / [] / {} and null for
 *   messages), so handlers read every field without undefined checks.
 * - oneofs: true: a virtual `parameter_choice` names the member that is set, which tells an unset
 *   parameter from one holding 0/false and lets us check value types.
 * - bytes stay Buffers: zero-copy views of the received message.
 */
export const PROTO_LOADER_OPTIONS: Readonly<Options> = Object.freeze({
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
});

export const PROTO_FILES = ['grpc_service.proto', 'health.proto'] as const;

export interface LoadedServices {
  inference: ServiceDefinition;
  health: ServiceDefinition;
  /** Everything loaded, e.g. to build clients: `grpcObject.inference.GRPCInferenceService`. */
  grpcObject: GrpcObject;
}

/** The repository's `proto/` folder, found from this file whether it runs from src or dist. */
export function defaultProtoDir(): string {
  let dir = __dirname;
  for (;;) {
    const candidate = path.join(dir, 'proto');
    if (fs.existsSync(path.join(candidate, 'grpc_service.proto'))) return candidate;
    const parent = path.dirname(dir);
    if (parent === dir) return path.resolve('proto');
    dir = parent;
  }
}

const cache = new Map<string, LoadedServices>();

function service(obj: GrpcObject, ...names: string[]): ServiceDefinition {
  let node: unknown = obj;
  for (const n of names) node = (node as Record<string, unknown>)[n];
  const ctor = node as { service?: ServiceDefinition } | undefined;
  if (!ctor?.service) throw new Error(`service ${names.join('.')} not found in the loaded .proto files`);
  return ctor.service;
}

/**
 * Loads grpc_service.proto (+ model_config.proto it imports) and health.proto from `protoDir`.
 * Cached per folder: loading takes tens of milliseconds.
 */
export function loadServices(protoDir: string = defaultProtoDir()): LoadedServices {
  const key = path.resolve(protoDir);
  const hit = cache.get(key);
  if (hit) return hit;
  const definition = loadSync([...PROTO_FILES], { ...PROTO_LOADER_OPTIONS, includeDirs: [key] });
  const grpcObject = loadPackageDefinition(definition);
  const loaded: LoadedServices = {
    inference: service(grpcObject, 'inference', 'GRPCInferenceService'),
    health: service(grpcObject, 'grpc', 'health', 'v1', 'Health'),
    grpcObject,
  };
  cache.set(key, loaded);
  return loaded;
}
