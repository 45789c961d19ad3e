/**
 * Shapes of the decoded gRPC messages as @grpc/proto-loader hands them to us with the loader options
 * of `proto-loader.ts` (keepCase, longs as strings, enums as names, defaults filled, oneof name set).
 * Only what the front door reads or writes is typed; field names are the proto's.
 */

/** `int64`/`uint64` fields arrive as decimal strings (`longs: String`) and may be sent as numbers. */
export type WireLong = string | number;

export interface WireInferParameter {
  bool_param?: boolean;
  int64_param?: WireLong;
  string_param?: string;
  double_param?: number;
  uint64_param?: WireLong;
  /** Which member of the oneof is set (`oneofs: true`); undefined when none. */
  parameter_choice?: 'bool_param' | 'int64_param' | 'string_param' | 'double_param' | 'uint64_param';
}

export type WireParameters = Record<string, WireInferParameter>;

/** InferTensorContents; every repeated field is present (possibly empty) on decode. */
export interface WireTensorContents {
  bool_contents?: boolean[];
  int_contents?: number[];
  int64_contents?: WireLong[];
  uint_contents?: number[];
  uint64_contents?: WireLong[];
  fp32_contents?: number[];
  fp64_contents?: number[];
  bytes_contents?: Uint8Array[];
}

export interface WireInferInputTensor {
  name: string;
  datatype: string;
  shape: WireLong[];
  parameters: WireParameters;
  contents: WireTensorContents | null;
}

export interface WireRequestedOutput {
  name: string;
  parameters: WireParameters;
}

export interface WireModelInferRequest {
  model_name: string;
  model_version: string;
  id: string;
  parameters: WireParameters;
  inputs: WireInferInputTensor[];
  outputs: WireRequestedOutput[];
  raw_input_contents: Buffer[];
}

export interface WireInferOutputTensor {
  name: string;
  datatype: string;
  shape: WireLong[];
  parameters?: WireParameters;
}

export interface WireModelInferResponse {
  model_name: string;
  model_version: string;
  id: string;
  parameters?: WireParameters;
  outputs: WireInferOutputTensor[];
  raw_output_contents: Uint8Array[];
}

export interface WireModelStreamInferResponse {
  error_message: string;
  infer_response?: Partial<WireModelInferResponse>;
}

/** Requests that carry a model name and a version string. */
export interface WireNameVersion {
  name: string;
  version: string;
}

export interface WireRepositoryParameter {
  bool_param?: boolean;
  int64_param?: WireLong;
  string_param?: string;
  bytes_param?: Buffer;
  parameter_choice?: 'bool_param' | 'int64_param' | 'string_param' | 'bytes_param';
}

export interface WireRepositoryIndexRequest {
  repository_name: string;
  ready: boolean;
}

export interface WireRepositoryModelRequest {
  repository_name: string;
  model_name: string;
  parameters: Record<string, WireRepositoryParameter>;
}

export interface WireTraceSettingRequest {
  settings: Record<string, { value: string[] }>;
  model_name: string;
}

export interface WireLogSettingValue {
  bool_param?: boolean;
  uint32_param?: number;
  string_param?: string;
  parameter_choice?: 'bool_param' | 'uint32_param' | 'string_param';
}

export interface WireLogSettingsRequest {
  settings: Record<string, WireLogSettingValue>;
}

export interface WireShmRequest {
  name: string;
}

export interface WireShmRegisterRequest extends WireShmRequest {
  key: string;
  offset: WireLong;
  byte_size: WireLong;
}
