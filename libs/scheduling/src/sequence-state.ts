import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ModelConfig, SequenceInitialState, SequenceState } from '@nereid/model-config';
import { InferenceError, type InferenceResponse } from '@nereid/protocol';
import {
  allocateTensorData,
  checkedZeroTensorBytes,
  elementCount,
  ELEMENT_SIZE,
  fromConfigType,
  retainStorage,
  viewAs,
  type DataType,
  type Tensor,
  type TensorData,
} from '@nereid/tensor';

/** The implicit states of one sequence: input name → the tensor its next request gets. */
export type StateValues = ReadonlyMap<string, Tensor>;

interface StateSpec {
  inputName: string;
  outputName: string;
  datatype: DataType;
  /** The tensor a sequence starts with: its `initial_state`, else zeros with variable dims as 1. */
  initial: Tensor;
}

/** Triton's folder of initial state data files, inside the model folder. */
const INITIAL_STATE_FOLDER = 'initial_state';

const invalid = (message: string): InferenceError => InferenceError.invalidArg(message);

/**
 * The most bytes one state's initial tensor may hold (as a request carries it: BYTES elements count
 * their 4-byte length and their contents): 64 MiB, Triton's default `--http-max-input-size`, so that
 * a config (a repository load may carry one) cannot size an allocation beyond what a request may
 * bring. Checked before anything is allocated or read.
 */
export const MAX_INITIAL_STATE_BYTES = 64 * 1024 * 1024;

/**
 * Implicit state (`sequence_batching.state`, model-config.md §9): each request of a sequence gets
 * the output state of the sequence's previous request as an input (named `input_name`), and the
 * first one (START) gets the initial state. The backend returns the new state as an output named
 * `output_name`; `capture` takes it out of the response before the client sees it.
 */
export class ImplicitStates {
  private readonly specs: StateSpec[];
  /** Names of the state outputs. */
  readonly outputNames: ReadonlySet<string>;

  private readonly batching: boolean;

  /** Reads the initial state data files under `<modelDir>/initial_state/`; throws INVALID_ARG. */
  constructor(config: ModelConfig, modelDir: string | undefined) {
    const batching = (config.max_batch_size ?? 0) > 0;
    this.batching = batching;
    const model = config.name ?? '';
    this.specs = (config.sequence_batching?.state ?? []).map((s) => stateSpec(s, batching, model, modelDir));
    this.outputNames = new Set(this.specs.map((s) => s.outputName));
  }

  get any(): boolean {
    return this.specs.length > 0;
  }

  /** Appends the input states of a row to `out`: `current`, or the initial states when undefined. */
  append(out: Tensor[], current: StateValues | undefined): void {
    for (const spec of this.specs) out.push(current?.get(spec.inputName) ?? spec.initial);
  }

  /**
   * Whether the input states a request would get (`current`, or the initial ones) have the shapes
   * of the states in `inputs` (another row's): rows of one batch must, unless dims are fixed.
   */
  fits(inputs: readonly Tensor[], current: StateValues | undefined): boolean {
    for (const spec of this.specs) {
      const mine = current?.get(spec.inputName) ?? spec.initial;
      const other = inputs.find((t) => t.name === spec.inputName);
      if (other === undefined || other.shape.length !== mine.shape.length) return false;
      for (let d = this.batching ? 1 : 0; d < mine.shape.length; d++) if (mine.shape[d] !== other.shape[d]) return false;
    }
    return true;
  }

  /** Appends each state output name the request does not list yet (undefined: nothing to add to). */
  requestOutputs<T extends { name: string }>(outputs: readonly T[] | undefined, make: (name: string) => T): T[] | undefined {
    if (outputs === undefined) return undefined;
    const out = outputs.slice();
    for (const spec of this.specs) if (!out.some((o) => o.name === spec.outputName)) out.push(make(spec.outputName));
    return out;
  }

  /**
   * Splits a response into what the client gets and the states it carries. State outputs the
   * client asked for by name (`keep`) stay in its response as well. `previous` is the sequence's
   * state before the request; a state the response does not carry keeps its previous value.
   */
  capture(
    response: InferenceResponse,
    previous: StateValues | undefined,
    keep: ReadonlySet<string> | undefined,
  ): { response: InferenceResponse; states: StateValues | undefined } {
    let states: Map<string, Tensor> | undefined;
    let stripped = false;
    for (const spec of this.specs) {
      const out = response.outputs.find((t) => t.name === spec.outputName);
      if (out === undefined) continue;
      states ??= new Map(previous ?? []);
      states.set(spec.inputName, { name: spec.inputName, datatype: out.datatype, shape: out.shape, data: out.data });
      // Kept for the sequence's next request: the client's response must not free it (reclaim.ts).
      retainStorage(out.data);
      if (keep?.has(out.name) !== true) stripped = true;
    }
    if (!stripped) return { response, states };
    const outputs = response.outputs.filter((t) => !this.outputNames.has(t.name) || keep?.has(t.name) === true);
    return { response: { ...response, outputs }, states };
  }
}

function stateSpec(state: SequenceState, batching: boolean, model: string, modelDir: string | undefined): StateSpec {
  const inputName = state.input_name ?? '';
  const datatype = fromConfigType(state.data_type ?? '') ?? 'FP32';
  const dims = state.dims ?? [];
  const inits = state.initial_state ?? [];
  if (inits.length > 1) {
    throw invalid(
      `initial_state field for state input '${inputName}' must contain exactly one or zero element. Found '${inits.length}' elements.`,
    );
  }
  const batchDim = batching ? [1] : [];
  let initial: Tensor;
  if (inits.length === 1) {
    const init = inits[0];
    checkInitialState(init, state, inputName);
    const shape = [...batchDim, ...(init.dims ?? [])];
    checkStateSize(shape, datatype, inputName, model);
    const data = init.data_file ? readDataFile(init, datatype, shape, inputName, model, modelDir) : allocateTensorData(datatype, elementCount(shape));
    initial = { name: inputName, datatype, shape, data };
  } else {
    const shape = [...batchDim, ...dims.map((d) => (d === -1 ? 1 : d))];
    checkStateSize(shape, datatype, inputName, model);
    initial = { name: inputName, datatype, shape, data: allocateTensorData(datatype, elementCount(shape)) };
  }
  return { inputName, outputName: state.output_name ?? '', datatype, initial };
}

/**
 * INVALID_ARG when a state of `shape` (zero or empty) takes more than MAX_INITIAL_STATE_BYTES or a
 * count JavaScript cannot hold exactly; past it, `elementCount(shape)` is exact.
 */
function checkStateSize(shape: readonly number[], datatype: DataType, inputName: string, model: string): void {
  const bytes = checkedZeroTensorBytes(shape, datatype, inputName, model);
  if (bytes > MAX_INITIAL_STATE_BYTES) throw tooLarge(inputName, model, shape, bytes);
}

function tooLarge(inputName: string, model: string, shape: readonly number[], bytes: number): InferenceError {
  return invalid(
    `the initial state of state input '${inputName}' in model '${model}' with shape [${shape.join(',')}] takes ${bytes} bytes, ` +
      `more than the ${MAX_INITIAL_STATE_BYTES} bytes an initial state may hold`,
  );
}

/** Triton's checks of an `initial_state` against its state (GenerateInitialStateData). */
function checkInitialState(init: SequenceInitialState, state: SequenceState, inputName: string): void {
  if ((init.data_type ?? '') !== (state.data_type ?? '')) {
    throw invalid(`The data type used for 'initial_state' field of state '${inputName}' does not match the state data type.`);
  }
  if (!init.name) throw invalid(`Field 'name' must be set when using initial_state for state input '${inputName}'.`);
  const dims = init.dims ?? [];
  const stateDims = state.dims ?? [];
  if (dims.length !== stateDims.length) {
    throw invalid(
      `Number of dimensions in 'initial_state' doesn't match the size of 'state' dimensions for state input '${inputName}'. ` +
        `${dims.length} != ${stateDims.length}`,
    );
  }
  dims.forEach((d, i) => {
    if (d === -1) throw invalid(`'initial_state' field for state input name '${inputName}' contains variable dimensions.`);
    if (stateDims[i] !== -1 && d !== stateDims[i]) {
      throw invalid(`'initial_state' dim for input name '${inputName}' doesn't match 'state' dim description. ${d} != ${stateDims[i]}`);
    }
  });
  if (init.zero_data === undefined && !init.data_file) throw invalid(`initial_state setting expects state'${inputName}' to have state_data set`);
}

/**
 * Reads an initial state's `data_file` from `<modelDir>/initial_state/`: raw little-endian elements
 * (at least as many bytes as the state needs; the rest is ignored, as Triton does), or for
 * TYPE_STRING Triton's serialized strings (a 4-byte length before each element). The config
 * pipeline checked that the path stays inside that folder; it is checked again here on the real
 * paths, as the file is read. Errors name the file as configured, never a server path.
 */
function readDataFile(
  init: SequenceInitialState,
  datatype: DataType,
  shape: number[],
  inputName: string,
  model: string,
  modelDir: string | undefined,
): TensorData {
  const file = init.data_file ?? '';
  const what = `data_file '${file}' of initial state '${init.name ?? ''}' for state input '${inputName}' in model '${model}'`;
  if (modelDir === undefined) throw invalid(`${what} cannot be read: the model folder is not known to the scheduler`);
  const folder = path.join(modelDir, INITIAL_STATE_FOLDER);
  let bytes: Buffer;
  try {
    const real = fs.realpathSync(path.join(folder, file));
    const realFolder = fs.realpathSync(folder);
    if (path.isAbsolute(file) || !real.startsWith(realFolder + path.sep)) throw invalid(`${what} is outside model directory`);
    // Sized before it is read: a BYTES state holds the file's contents, a numeric one only reads
    // the bytes its shape needs (the rest is ignored).
    const size = fs.statSync(real).size;
    if (datatype === 'BYTES' && size > MAX_INITIAL_STATE_BYTES) throw tooLarge(inputName, model, shape, size);
    bytes = datatype === 'BYTES' ? fs.readFileSync(real) : readPrefix(real, Math.min(size, elementCount(shape) * ELEMENT_SIZE[datatype]));
  } catch (e) {
    if (e instanceof InferenceError) throw e;
    throw invalid(`failed to read ${what}: ${(e as NodeJS.ErrnoException).code ?? 'unreadable'}`);
  }
  const count = elementCount(shape);
  if (datatype === 'BYTES') return parseStrings(bytes, count, what);
  const need = count * ELEMENT_SIZE[datatype];
  if (bytes.byteLength < need) {
    throw invalid(`initial_state setting expects ${need} bytes, but the data provided from ${file} only has ${bytes.byteLength} bytes.`);
  }
  const copy = new Uint8Array(need);
  copy.set(bytes.subarray(0, need));
  return viewAs(datatype, copy);
}

function parseStrings(bytes: Buffer, count: number, what: string): Uint8Array[] {
  const out: Uint8Array[] = [];
  let at = 0;
  while (out.length < count) {
    if (at + 4 > bytes.byteLength) throw invalid(`${what} holds ${out.length} strings, the state needs ${count}`);
    const length = bytes.readUInt32LE(at);
    at += 4;
    if (at + length > bytes.byteLength) throw invalid(`${what} ends inside string ${out.length}`);
    out.push(Uint8Array.from(bytes.subarray(at, at + length)));
    at += length;
  }
  return out;
}

/** The first `length` bytes of `file` (fewer if it is shorter). */
function readPrefix(file: string, length: number): Buffer {
  const out = Buffer.alloc(length);
  const fd = fs.openSync(file, 'r');
  try {
    let done = 0;
    while (done < length) {
      const n = fs.readSync(fd, out, done, length - done, done);
      if (n === 0) break;
      done += n;
    }
    return done === length ? out : out.subarray(0, done);
  } finally {
    fs.closeSync(fd);
  }
}
