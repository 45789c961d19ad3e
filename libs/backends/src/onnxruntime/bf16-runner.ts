import { promises as fs } from 'node:fs';
import type { ModelConfig } from '@nereid/model-config';
import { bf16ArrayToFloat32 } from '@nereid/tensor';
import { aliasOf, ONNX_BFLOAT16, wrapBf16Io } from './bf16-graph';
import { readOnnxModelInfo, type OnnxModelInfo, type OnnxValueInfo } from './onnx-model-info';
import type { RunTensor } from './messages';
import type { RunOptions, SessionInput, SessionRunner } from './session-runner';

/**
 * A session of a model opened with its BF16 graph inputs and outputs carried as FLOAT (see
 * bf16-graph.ts), seen as the model itself: its names are the model's, BF16 feeds (raw 16-bit
 * patterns, type `bfloat16`) go in as the float32 values they stand for, and the FLOAT outputs
 * come back as BF16 bits (the upper half of each float32, exact: the values came out of a
 * BF16 → FLOAT cast).
 */
export class Bf16SessionRunner implements SessionRunner {
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  readonly inputs: readonly SessionInput[] | undefined;
  private readonly inputAliases: ReadonlyMap<string, string>;
  private readonly outputAliases: ReadonlyMap<string, string>;

  constructor(
    private readonly inner: SessionRunner,
    bf16Inputs: readonly string[],
    bf16Outputs: readonly string[],
  ) {
    this.inputAliases = new Map(bf16Inputs.map((n) => [aliasOf(n), n]));
    this.outputAliases = new Map(bf16Outputs.map((n) => [aliasOf(n), n]));
    this.inputNames = inner.inputNames.map((n) => this.inputAliases.get(n) ?? n);
    this.outputNames = inner.outputNames.map((n) => this.outputAliases.get(n) ?? n);
    this.inputs = inner.inputs?.map((i) => {
      const name = this.inputAliases.get(i.name);
      return name === undefined ? i : { ...i, name, type: 'bfloat16' };
    });
  }

  run(feeds: RunTensor[], fetches: string[], options?: RunOptions): Promise<RunTensor[]> {
    const innerFeeds = feeds.map((t): RunTensor => {
      if (t.type !== 'bfloat16' || !(t.data instanceof Uint16Array)) return t;
      return { name: aliasOf(t.name), type: 'float32', dims: t.dims, data: bf16ArrayToFloat32(t.data) };
    });
    const bf16Out = new Set(fetches.filter((n) => this.outputAliases.has(aliasOf(n))));
    const innerFetches = fetches.map((n) => (bf16Out.has(n) ? aliasOf(n) : n));
    return this.inner.run(innerFeeds, innerFetches, options).then((outputs) =>
      outputs.map((t, i) => {
        const name = fetches[i];
        if (!bf16Out.has(name) || !(t.data instanceof Float32Array)) return t;
        return { name, type: 'bfloat16', dims: t.dims, data: upperHalves(t.data) };
      }),
    );
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

/** The upper 16 bits of each float32: the BF16 value a BF16 → FLOAT cast widened. */
function upperHalves(values: Float32Array): Uint16Array {
  const aligned = values.byteOffset % 4 === 0 ? values : values.slice();
  const bits = new Uint32Array(aligned.buffer, aligned.byteOffset, aligned.length);
  const out = new Uint16Array(values.length);
  for (let i = 0; i < bits.length; i++) out[i] = bits[i] >>> 16;
  return out;
}

/** What the session runners open for a model, and how their runner is seen. */
export interface SessionSource {
  /** The model file, or its rewritten bytes. */
  model: string | Uint8Array;
  wrap(runner: SessionRunner): SessionRunner;
}

/**
 * The model file as it is, or, when the (completed) config gives the model BF16 inputs or outputs,
 * its bytes with those carried as FLOAT (bf16-graph.ts) and a runner that maps them back. Only
 * such models are rewritten: for the others onnxruntime reads the file itself. `read`: the file's
 * bytes and graph when the caller has them already (read here otherwise).
 */
export async function sessionSourceOf(
  config: ModelConfig,
  file: string,
  read?: { bytes: Uint8Array; info: OnnxModelInfo },
): Promise<SessionSource> {
  const declared = [...(config.input ?? []), ...(config.output ?? [])].some((t) => t.data_type === 'TYPE_BF16');
  if (!declared) return { model: file, wrap: (r) => r };
  const bytes = read?.bytes ?? (await fs.readFile(file));
  const info = read?.info ?? readOnnxModelInfo(bytes);
  const bf16 = (values: readonly OnnxValueInfo[]): string[] =>
    values.filter((v) => v.isTensor && v.elemType === ONNX_BFLOAT16).map((v) => v.name);
  const inputs = bf16(info.inputs);
  const outputs = bf16(info.outputs);
  if (inputs.length === 0 && outputs.length === 0) return { model: file, wrap: (r) => r };
  return {
    model: wrapBf16Io(bytes, inputs, outputs),
    wrap: (r) => new Bf16SessionRunner(r, inputs, outputs),
  };
}
