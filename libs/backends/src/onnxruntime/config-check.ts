import type { ModelConfig, ModelInput, SequenceControl } from '@nereid/model-config';
import { InferenceError } from '@nereid/protocol';
import { fromConfigType } from '@nereid/tensor';
import { dataTypeFromOnnx } from './datatypes';
import type { OnnxModelInfo, OnnxValueInfo } from './onnx-model-info';

/**
 * The config checked against the ONNX graph when an instance loads, in the order and words of
 * Triton's onnxruntime backend (ModelInstanceState: the sequence controls, the input count, each
 * input, each output, each state): every declared tensor must exist in the graph with the same
 * element type and compatible dims (the batch dim when max_batch_size > 0, `reshape` where given).
 * Sequence controls and implicit states are graph inputs (and outputs) the sequence batcher fills,
 * so they count as inputs. `file` names the model file in messages (relative to the repository).
 * Throws INVALID_ARG (INTERNAL for a control the graph lacks, as Triton).
 */
export function checkConfigAgainstOnnx(config: ModelConfig, info: OnnxModelInfo, file: string): void {
  const check = new ConfigCheck(config, info, file);
  const controls = check.controls();
  check.inputs(controls);
  check.outputs();
  check.states();
}

/** ONNX element type names as Triton's onnxruntime backend writes them (OnnxDataTypeName). */
const ONNX_TYPE_NAMES: ReadonlyMap<number, string> = new Map([
  [1, 'FLOAT'], [2, 'UINT8'], [3, 'INT8'], [4, 'UINT16'], [5, 'INT16'], [6, 'INT32'], [7, 'INT64'], [8, 'STRING'],
  [9, 'BOOL'], [10, 'FLOAT16'], [11, 'DOUBLE'], [12, 'UINT32'], [13, 'UINT64'], [16, 'BFLOAT16'],
]);

/** Triton's ShapeToString: `[-1,16]`. */
function shape(dims: readonly number[]): string {
  return `[${dims.join(',')}]`;
}

/** The datatype a control of this kind is declared with (Triton's Get*SequenceControlProperties). */
function controlType(control: SequenceControl): string {
  if (control.kind === 'CONTROL_SEQUENCE_CORRID') return control.data_type ?? '';
  if ((control.fp32_false_true?.length ?? 0) > 0) return 'TYPE_FP32';
  if ((control.bool_false_true?.length ?? 0) > 0) return 'TYPE_BOOL';
  return 'TYPE_INT32';
}

class ConfigCheck {
  private readonly model: string;
  private readonly maxBatch: number;
  private readonly graphInputs: Map<string, OnnxValueInfo>;
  private readonly graphOutputs: Map<string, OnnxValueInfo>;

  constructor(
    private readonly config: ModelConfig,
    private readonly info: OnnxModelInfo,
    private readonly file: string,
  ) {
    this.model = config.name ?? '';
    this.maxBatch = Math.max(0, config.max_batch_size ?? 0);
    // Overridable initializers may be fed like inputs (Triton merges them in after the count).
    this.graphInputs = new Map([...(info.overridable ?? []), ...info.inputs].map((v) => [v.name, v]));
    this.graphOutputs = new Map(info.outputs.map((v) => [v.name, v]));
  }

  /** Each control tensor: a graph input of dims [1] (after the batch dim) and the control's type. */
  controls(): number {
    let count = 0;
    for (const input of this.config.sequence_batching?.control_input ?? []) {
      const name = input.name ?? '';
      const control = input.control?.[0];
      if (!control) continue;
      count++;
      const graph = this.graphInputs.get(name);
      if (!graph) {
        throw this.fail(InferenceError.internal(`configuration specified sequence control '${name}', but model does not provide that input`));
      }
      if (graph.dims !== undefined) {
        const debatched = graph.dims.slice(this.maxBatch > 0 ? 1 : 0);
        // A free dim takes the [1] the sequence batcher sends (Triton asks for a literal 1).
        if (debatched.length !== 1 || (debatched[0] !== 1 && debatched[0] !== -1)) {
          throw this.invalid(`sequence control '${name}' in model has dims ${shape(debatched)} but dims [1] is expected`);
        }
      }
      const declared = controlType(control);
      if (!this.sameType(declared, graph)) {
        throw this.invalid(
          `sequence control '${name}', the model expects data-type ${this.onnxName(graph)} but the model configuration specifies data-type ${declared}`,
        );
      }
    }
    return count;
  }

  /** The input count (required inputs, batch inputs, controls, states), then each declared input. */
  inputs(controls: number): void {
    const declared = this.config.input ?? [];
    const expected =
      declared.filter((i) => !i.optional).length +
      (this.config.batch_input?.length ?? 0) +
      controls +
      (this.config.sequence_batching?.state?.length ?? 0);
    if (this.info.inputs.length !== expected) {
      throw this.invalid(`configuration expects ${expected} inputs, model provides ${this.info.inputs.length}`);
    }
    for (const input of declared) {
      const name = input.name ?? '';
      const graph = this.graphInputs.get(name);
      if (!graph) {
        throw this.fail(InferenceError.invalidArg(`unexpected inference input '${name}', allowed inputs are: ${sorted(this.graphInputs.keys())}`));
      }
      if (input.optional && this.maxBatch > 0) {
        throw this.invalid(`optional input '${name}' is not supported for models that support batching`);
      }
      this.checkType(input.data_type ?? '', graph, 'input');
      this.checkDims(name, graph, dimsOf(input));
    }
  }

  /**
   * Each declared output: in the graph, same type, compatible dims. Triton compares outputs
   * exactly (a free graph dim refuses a fixed config dim); here a free dim matches, as for inputs:
   * the graph does not say the config is wrong, and such models (identity graphs with free dims
   * under a fixed config) served well before this check existed.
   */
  outputs(): void {
    const batchOutputs = new Set((this.config.batch_output ?? []).flatMap((b) => b.target_name ?? []));
    for (const output of this.config.output ?? []) {
      const name = output.name ?? '';
      const graph = this.graphOutputs.get(name);
      if (!graph) {
        throw this.fail(InferenceError.invalidArg(`unexpected inference output '${name}', allowed outputs are: ${sorted(this.graphOutputs.keys())}`));
      }
      this.checkType(output.data_type ?? '', graph, 'output');
      if (!batchOutputs.has(name)) this.checkDims(name, graph, dimsOf(output));
    }
  }

  /** Each implicit state: its input and its output are graph tensors of the state's type and dims. */
  states(): void {
    for (const state of this.config.sequence_batching?.state ?? []) {
      const dims = state.dims ?? [];
      this.stateTensor('output', state.output_name ?? '', state.data_type ?? '', dims);
      this.stateTensor('input', state.input_name ?? '', state.data_type ?? '', dims);
    }
  }

  /** One side of an implicit state: a graph `side` named `name` of the state's type and dims. */
  private stateTensor(side: 'input' | 'output', name: string, dataType: string, dims: readonly number[]): void {
    const tensors = side === 'input' ? this.graphInputs : this.graphOutputs;
    const graph = tensors.get(name);
    if (!graph) {
      throw this.fail(InferenceError.invalidArg(`unexpected inference ${side} '${name}', allowed ${side}s are: ${sorted(tensors.keys())}`));
    }
    this.checkType(dataType, graph, `${side} state`);
    this.checkDims(graph.name, graph, dims);
  }

  private sameType(declared: string, graph: OnnxValueInfo): boolean {
    const datatype = fromConfigType(declared);
    return graph.isTensor && datatype !== undefined && dataTypeFromOnnx(graph.elemType) === datatype;
  }

  private checkType(declared: string, graph: OnnxValueInfo, what: string): void {
    if (fromConfigType(declared) === undefined) {
      throw this.fail(InferenceError.internal(`unsupported datatype ${declared} for ${what} '${graph.name}' for model '${this.model}'`));
    }
    if (!this.sameType(declared, graph)) {
      const provided = graph.isTensor ? dataTypeFromOnnx(graph.elemType) : undefined;
      throw this.invalid(
        `configuration expects datatype ${declared} for ${what} '${graph.name}', model provides TYPE_${provided ?? 'INVALID'}`,
      );
    }
  }

  /**
   * Triton's CompareDimsSupported: with batching the graph's first dim must be free and the rest
   * match the config's; a free graph dim matches any config dim. A graph scalar takes only dims of
   * 1. A graph that does not declare the rank is not checked.
   */
  private checkDims(name: string, graph: OnnxValueInfo, dims: readonly number[]): void {
    const modelShape = graph.dims;
    if (modelShape === undefined) return;
    if (modelShape.length === 0) {
      if (dims.some((d) => d !== 1)) {
        throw this.invalid(
          `scalar tensor '${name}', should only provide 1 in the model configuration when the model doesn't support batching. Model configuration provided: ${shape(dims)}.`,
        );
      }
      return;
    }
    const batching = this.maxBatch > 0;
    if (batching && modelShape[0] !== -1) {
      throw this.dimsError(
        `model '${this.model}', tensor '${name}': for the model to support batching the shape should have at least 1 dimension and the first dimension must be -1; but shape expected by the model is ${shape(modelShape)}`,
      );
    }
    const full = batching ? [-1, ...dims] : [...dims];
    const matches =
      modelShape.length === full.length && modelShape.every((d, i) => d === -1 || d === full[i]);
    if (matches) return;
    const configured = batching
      ? `${full.length} dimensions (an initial batch dimension because max_batch_size > 0 followed by the explicit tensor shape, making complete shape ${shape(full)})`
      : `${dims.length} dimensions (shape ${shape(dims)})`;
    throw this.dimsError(
      `model '${this.model}', tensor '${name}': the model expects ${modelShape.length} dimensions (shape ${shape(modelShape)}) but the model configuration specifies ${configured}`,
    );
  }

  private onnxName(graph: OnnxValueInfo): string {
    return ONNX_TYPE_NAMES.get(graph.elemType) ?? 'UNDEFINED';
  }

  /** Triton's "unable to load model 'M', ..." with the file the graph was read from. */
  private invalid(words: string): InferenceError {
    return this.fail(InferenceError.invalidArg(`unable to load model '${this.model}', ${words}`));
  }

  private dimsError(words: string): InferenceError {
    return this.fail(InferenceError.invalidArg(words));
  }

  private fail(error: InferenceError): InferenceError {
    return new InferenceError(error.code, `${error.message} (ONNX file '${this.file}')`);
  }
}

/** The dims a tensor is checked with: its `reshape` when it has one. */
function dimsOf(io: Pick<ModelInput, 'dims' | 'reshape'>): number[] {
  return io.reshape?.shape ?? io.dims ?? [];
}

/** Names as Triton lists them (a std::set: sorted, comma separated). */
function sorted(names: Iterable<string>): string {
  return [...names].sort().join(', ');
}
