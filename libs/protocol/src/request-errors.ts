import { echo } from './echo';
import { InferenceError } from './errors';

/**
 * The words of every request-validation error, in one place, taken from Triton's sources so that
 * clients matching on Triton's messages match ours: core `src/infer_request.cc` and `src/model.cc`,
 * server `src/http_server.cc`, `src/data_compressor.h` and `src/grpc/infer_handler.cc`. The few
 * errors Triton has no words for are marked "Nereid's own". HTTP, gRPC, the tensor codecs and the
 * core's validation all build their errors here; to add one, add a builder to the group of the
 * Triton file it comes from.
 *
 * Every piece of client text goes through `echo` (clipped, see echo.ts). Names are not escaped,
 * as Triton does not escape them.
 *
 * Where Triton answers a malformed HTTP request with INTERNAL (TritonJson's errors), Nereid keeps
 * Triton's words and answers INVALID_ARG (400): the client sent it, the server is fine.
 */

/** Triton's `LogRequest()` prefix of core request errors: `[request id: <id>] `. */
export function requestPrefix(id: string): string {
  return `[request id: ${id ? echo(id) : '<id_unknown>'}] `;
}

/** Triton's `DimsListToString`: `[1,16]`. */
function dimsToString(dims: readonly (number | bigint | string)[]): string {
  return `[${dims.join(',')}]`;
}

function quotedList(names: readonly string[]): string {
  return `[${names.map((n) => `'${echo(n)}'`).join(',')}]`;
}

const invalid = (message: string): InferenceError => InferenceError.invalidArg(message);

/** What TritonJson says when a JSON member is absent or has the wrong type (triton_json.h). */
export const JsonAccess = {
  missing: (member: string): string => `attempt to access non-existing object member '${echo(member)}'`,
  array: 'attempt to access JSON non-array as array',
  object: 'attempt to access JSON non-object as object',
  string: 'attempt to access JSON non-string as string',
  boolean: 'attempt to access JSON non-boolean as boolean',
  unsigned: 'attempt to access JSON non-unsigned-integer as unsigned-integer',
} as const;

/** The core's checks of a request against the model (core src/infer_request.cc). */
export const CoreRequestErrors = {
  inputAlreadyExists: (id: string, input: string) =>
    invalid(`${requestPrefix(id)}input '${echo(input)}' already exists in request`),

  outputAlreadyExists: (id: string, output: string) =>
    invalid(`${requestPrefix(id)}output '${echo(output)}' already exists in request`),

  /**
   * Too few or too many inputs (`ValidateRequestInputs`). `configInputs` counts the config's inputs,
   * `required` its non-optional ones. An empty list prints `[]` (Triton prints a lone `]` for an
   * empty missing list, a slip of its string building).
   */
  inputCount: (id: string, model: string, configInputs: number, required: number, got: readonly string[], missing: readonly string[]) => {
    const expected =
      configInputs === required ? `expected ${configInputs} inputs` : `expected number of inputs between ${required} and ${configInputs}`;
    return invalid(
      `${requestPrefix(id)}${expected} but got ${got.length} inputs for model '${echo(model)}'. ` +
        `Got input(s) ${quotedList(got)}, but missing required input(s) ${quotedList(missing)}. ` +
        'Please provide all required input(s).',
    );
  },

  noShapeForBatch: (id: string, input: string, model: string) =>
    invalid(`${requestPrefix(id)}input '${echo(input)}' has no shape but model requires batch dimension for '${echo(model)}'`),

  batchSizeMismatch: (id: string, input: string, model: string) =>
    invalid(`${requestPrefix(id)}input '${echo(input)}' batch size does not match other inputs for '${echo(model)}'`),

  batchSizeTooLarge: (id: string, maxBatchSize: number, model: string) =>
    invalid(`${requestPrefix(id)}inference request batch-size must be <= ${maxBatchSize} for '${echo(model)}'`),

  /** Nereid's own: Triton runs a batch of 0. */
  batchSizeTooSmall: (id: string, model: string) =>
    invalid(`${requestPrefix(id)}inference request batch-size must be >= 1 for '${echo(model)}'`),

  datatypeMismatch: (id: string, input: string, got: string, model: string, expected: string) =>
    invalid(
      `${requestPrefix(id)}inference input '${echo(input)}' data-type is '${echo(got)}', but model '${echo(model)}' expects '${expected}'`,
    ),

  /** A dimension of -1 (or any negative one) in a request's shape. */
  unspecifiedDims: (id: string, input: string, model: string, shape: readonly (number | bigint | string)[]) =>
    invalid(
      `${requestPrefix(id)}All input dimensions should be specified for input '${echo(input)}' for model '${echo(model)}', got ${echo(dimsToString(shape))}`,
    ),

  /**
   * Shape against the config's dims; `expected` includes the -1 batch dimension when the model
   * batches. Triton ends the message with ". " and, for batching models, a note.
   */
  unexpectedShape: (id: string, input: string, model: string, expected: readonly number[], got: readonly number[], batching: boolean) =>
    invalid(
      `${requestPrefix(id)}unexpected shape for input '${echo(input)}' for model '${echo(model)}'. ` +
        `Expected ${dimsToString(expected)}, got ${echo(dimsToString(got))}. ${batching ? BATCH_NOTE : ''}`,
    ),

  byteSizeMismatch: (input: string, model: string, expected: number, got: number) =>
    invalid(`input byte size mismatch for input '${echo(input)}' for model '${echo(model)}'. Expected ${expected}, got ${got}`),

  /**
   * A shape whose byte size (elements × element size) passes 2^53 - 1, where JavaScript numbers stop
   * counting exactly; Nereid's own words (Triton's int64 arithmetic overflows later, at 2^63).
   */
  shapeTooLarge: (input: string, model: string, shape: readonly number[]) =>
    invalid(
      `the shape ${echo(dimsToString(shape))} of input '${echo(input)}' for model '${echo(model)}' has a byte size beyond ` +
        `${Number.MAX_SAFE_INTEGER} bytes`,
    ),

  // BYTES tensors (`ValidateBytesInputs`). The tensor codec checks them without the request at
  // hand: no request-id prefix.
  stringElementsBeyond: (input: string, model: string, got: number, expected: number) =>
    invalid(`unexpected number of string elements ${got} for inference input '${echo(input)}' for model '${echo(model)}', expecting ${expected}`),

  incompleteLengthIndicator: (input: string, model: string, available: number) =>
    invalid(
      `incomplete string length indicator for inference input '${echo(input)}' for model '${echo(model)}', expecting 4 bytes but only ` +
        `${available} bytes available. Please make sure the string length indicator is in one buffer.`,
    ),

  stringElementCount: (expected: number, input: string, model: string, got: number) =>
    invalid(`expected ${expected} string elements for inference input '${echo(input)}' for model '${echo(model)}', got ${got}`),

  /** Nereid's own: an element longer than what is left of the data (Triton lets it pass). */
  stringElementBeyondData: (input: string, model: string, element: number, declared: number, remaining: number) =>
    invalid(
      `element byte size exceeds the end of the buffer for inference input '${echo(input)}' for model '${echo(model)}': ` +
        `element ${element} declares ${declared} bytes, ${remaining} remain`,
    ),

  /** A raw (header-less) HTTP request to a model that has not exactly one input. */
  rawInputCount: (id: string, configInputs: number, model: string) =>
    invalid(
      `${requestPrefix(id)}Raw request must only have 1 input (found 1) to be deduced but got ${configInputs} inputs in '${echo(model)}' model configuration`,
    ),

  rawShapeNotDeducible: (id: string, input: string) =>
    invalid(
      `${requestPrefix(id)}The shape of the raw input '${echo(input)}' can not be deduced because there are more than one variable-sized dimension`,
    ),

  rawBytesShape: (id: string, input: string) =>
    invalid(`${requestPrefix(id)}For BYTE datatype raw input '${echo(input)}', the model must have input shape [1]`),
} as const;

const BATCH_NOTE =
  'NOTE: Setting a non-zero max_batch_size in the model config requires a batch dimension to be prepended to each ' +
  'input shape. If you want to specify the full shape including the batch dim in your input dims config, try ' +
  'setting max_batch_size to zero. See the model configuration docs for more info on max_batch_size.';

/** Errors the model raises on names it does not have (core src/model.cc): no request prefix. */
export const ModelIoErrors = {
  unexpectedInput: (input: string, model: string) =>
    invalid(`unexpected inference input '${echo(input)}' for model '${echo(model)}'`),
  unexpectedOutput: (output: string, model: string) =>
    invalid(`unexpected inference output '${echo(output)}' for model '${echo(model)}'`),
} as const;

/** Which data sources an HTTP input sets (`ValidateInputContentType`). */
export interface InputSources {
  data: boolean;
  binary: boolean;
  sharedMemory: boolean;
}

/** The HTTP front door's words (server src/http_server.cc, src/data_compressor.h). */
export const HttpRequestErrors = {
  /** `detail` is the JSON parser's own message. */
  jsonParse: (detail: string) => invalid(`failed to parse the request JSON buffer: ${echo(detail)}`),

  /** The request's `parameters` is not a JSON object. */
  requestParameters: () => invalid('failed to get request params.: attempt to get members for non-object'),

  /** `Unable to parse '<field>': <detail>`, detail usually one of JsonAccess. */
  unableToParse: (field: string, detail: string) => invalid(`Unable to parse '${echo(field)}': ${detail}`),

  invalidDatatype: (input: string) => invalid(`invalid datatype for input ${echo(input)}`),

  /** Arrays in an input's `data` nested `limit` deep (Triton's parser gives up at that depth). */
  dataNestingDepth: (limit: number) => invalid(`Unable to parse 'data': JSON nesting depth exceeds maximum allowed limit (${limit})`),

  inputSources: (s: InputSources) => {
    let which = '';
    if (!s.data && !s.binary && !s.sharedMemory) which = ' no field is set';
    else which = ` set${s.data ? " 'data'" : ''}${s.binary ? " 'binary_data_size'" : ''}${s.sharedMemory ? " 'shared_memory_region'" : ''}`;
    return invalid(
      "Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', " +
        `'shared_memory_region' in 'parameters'. But${which}`,
    );
  },

  binaryWithoutHeaderLength: () =>
    invalid(
      "must specify valid 'Infer-Header-Content-Length' in request header and 'binary_data_size' when passing inputs in binary data format",
    ),

  unexpectedInputSize: (input: string, bytes: number, model: string) =>
    invalid(`unexpected size for input '${echo(input)}', expecting ${bytes} additional bytes for model '${echo(model)}'`),

  unexpectedAdditionalData: (model: string) => invalid(`unexpected additional input data for model '${echo(model)}'`),

  headerLengthNotInteger: (value: string) =>
    invalid(`Unable to parse Inference-Header-Content-Length, got: ${echo(value)}`),

  headerLengthOutOfRange: (value: string) =>
    invalid(`Unable to parse Inference-Header-Content-Length, value is out of range [ -2147483648, 2147483647 ], got: ${echo(value)}`),

  headerLengthBeyondBody: (value: string, contentLength: number) =>
    invalid(`inference header size should be in range (0, ${contentLength}), got: ${echo(value)}`),

  parameterType: (key: string) =>
    invalid(`parameter '${echo(key)}' has invalid type. It should be either 'int', 'bool', or 'string'.`),

  reservedParameter: () =>
    invalid("parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified."),

  /** A JSON body (no Inference-Header-Content-Length, or its JSON part) over --http-max-input-size. */
  requestJsonTooLarge: (size: number, limit: number) =>
    invalid(
      `request JSON size of ${size} bytes exceeds the maximum allowed input size of ${limit} bytes. Use --http-max-input-size to increase the limit.`,
    ),

  /** A raw request (Inference-Header-Content-Length: 0) over --http-max-input-size. */
  rawInputTooLarge: (size: number, limit: number) =>
    invalid(
      `Raw input has a byte_size (${size} bytes) that exceeds the maximum allowed value of ${limit} bytes. Use --http-max-input-size to increase the limit.`,
    ),

  /**
   * A JSON header plus binary section over --http-max-input-size (Nereid's own: Triton limits the
   * JSON part only; Nereid bounds the whole body it holds in memory). Triton's words for the
   * generate endpoint's request size.
   */
  requestTooLarge: (size: number, limit: number) =>
    invalid(
      `request size of ${size} bytes exceeds the maximum allowed input size of ${limit} bytes. Use --http-max-input-size to increase the limit.`,
    ),

  decompressedTooLarge: (limit: number) =>
    invalid(`Decompressed data size exceeds the maximum allowed value of ${limit} bytes. Use --http-max-input-size to increase the limit.`),

  /**
   * Nereid's own (issue 16): a request whose BYTES elements, each counted at what it costs decoded
   * (`elementCost`, libs/tensor's BYTES_ELEMENT_COST), take it over --http-max-input-size.
   */
  decodedTooLarge: (size: number, elements: number, elementCost: number, limit: number) =>
    invalid(
      `request size of ${size} bytes with ${elements} BYTES elements (${elementCost} bytes each decoded) takes ${size + elements * elementCost} bytes, which exceeds the maximum allowed input size of ${limit} bytes. Use --http-max-input-size to increase the limit.`,
    ),
} as const;

/** The gRPC front door's words (server src/grpc/infer_handler.cc, src/grpc/grpc_utils.cc). */
export const GrpcRequestErrors = {
  /**
   * A datatype Triton does not know. Triton's gRPC door hands it to the core, which prints it as
   * '<invalid>' in a datatype-mismatch error; the HTTP door's words name the input.
   */
  invalidDatatype: HttpRequestErrors.invalidDatatype,

  /** A parameter in the wrong InferParameter member; `expected` lists the right ones ("bool_param"). */
  parameterType: (key: string, expected: string) => invalid(`invalid value type for '${echo(key)}' parameter, expected ${expected}.`),

  /** A custom parameter sent as uint64_param (Triton takes int64, bool, string and double). */
  customParameterType: (key: string) =>
    invalid(`invalid value type for '${echo(key)}' parameter, expected int64_param, bool_param, or string_param.`),

  priorityValue: () => invalid("invalid value for 'priority', expected value >= 0."),

  reservedParameter: () =>
    invalid(
      "parameter keys starting with 'triton_' are reserved for Triton usage. Only the following keys starting with 'triton_' are allowed: triton_enable_empty_final_response",
    ),

  /** Typed contents in a field of another type than the input's datatype (`InferGRPCToInputHelper`). */
  contentsType: (input: string, model: string, fieldType: string, datatype: string) =>
    invalid(
      `unexpected explicit tensor data for input tensor '${echo(input)}' for model '${echo(model)}' of type '${fieldType}', expected datatype '${echo(datatype)}'`,
    ),

  /** A second non-empty typed contents field. */
  contentsTwice: (input: string, model: string) =>
    invalid(`unexpected explicit tensor data for input tensor '${echo(input)}' for model '${echo(model)}', binary data was already supplied.`),

  /** A `model_version` that is not an integer (Triton: std::stol's failure, "stol"). */
  versionNotInteger: (version: string) =>
    invalid(
      `failed to get model version from specified version string '${echo(version)}' (details: stol), version should be an integral value > 0`,
    ),

  versionNegative: (version: string) =>
    invalid(`invalid model version specified '${echo(version)}' , version should be an integral value > 0`),

  classificationType: () => invalid("invalid value type for 'classification' parameter, expected int64_param"),

  /** Triton's words say ">= 0" for a check that refuses 0. */
  classificationValue: () => invalid("invalid value for 'classification' parameter, expected >= 0"),

  contentsWithRaw: (input: string, model: string) =>
    invalid(`contents field must not be specified when using raw_input_contents for '${echo(input)}' for model '${echo(model)}'`),

  missingInputData: (input: string, model: string) =>
    invalid(`unable to find data for input tensor '${echo(input)}' for model '${echo(model)}' in request.`),

  /**
   * Nereid's own (issue 16): a message whose entries and elements, counted at what protobufjs and
   * Nereid make of them (grpc/request-scan.ts), take it over the largest message received (64 MiB
   * at least). `decoded` is what was counted when the scan stopped: at least that much.
   */
  decodedTooLarge: (size: number, decoded: number, limit: number) =>
    invalid(
      `request message size of ${size} bytes takes at least ${decoded} bytes decoded (its tensor elements, bytes entries and embedded messages counted at their decoded size), which exceeds the maximum allowed decoded message size of ${limit} bytes. Use --grpc-max-message-size (or --http-max-input-size when it is unset) to increase the limit.`,
    ),

  /** Nereid's own: Triton ignores raw contents beyond the inputs that take them. */
  extraRawContents: (used: number, sent: number, model: string) =>
    invalid(`expected ${used} raw_input_contents entries (one per input without contents) for model '${echo(model)}', got ${sent}`),
} as const;

/**
 * The sequence batcher's words (core src/sequence_batch_scheduler/, src/infer_request.cc
 * `ValidateCorrelationId`). `sequence` is the correlation id as Triton prints it: the number, or
 * the string as sent.
 */
export const SequenceBatcherErrors = {
  /** A STRING correlation id to a model whose CORRID control is numeric, or the other way round. */
  correlationIdType: (id: string, control: string, got: string, model: string, expected: string) =>
    invalid(
      `${requestPrefix(id)}sequence batching control '${echo(control)}' data-type is '${got}', but model '${echo(model)}' expects '${expected}'`,
    ),

  batchSizeOne: (model: string) =>
    invalid(`inference request to model '${echo(model)}' must specify batch-size 1 due to requirements of sequence batcher`),

  correlationIdRequired: (model: string) =>
    invalid(`inference request to model '${echo(model)}' must specify a non-zero or non-empty correlation ID`),

  startRequired: (sequence: string, model: string) =>
    invalid(
      `inference request for sequence ${echo(sequence)} to model '${echo(model)}' must specify the START flag on the first request of the sequence`,
    ),

  /** A new sequence (START) while the model is being unloaded; live sequences may still finish. */
  stopping: () => InferenceError.unavailable('Server is stopping, scheduler for model has stopped accepting new inference requests'),

  /** A request's `timeout` passed while its sequence waited in the backlog for a slot. */
  backlogTimeout: () => InferenceError.unavailable('timeout of the corresponding sequence has been expired'),
} as const;
