import type { ModelInput, ModelOutput } from '@nereid/model-config';
import type { ExecutionItem, InferenceResponse } from '@nereid/protocol';
import { elementCount, type Tensor } from '@nereid/tensor';
import type { RunTensor } from './messages';
import { joinData, ortTypeFor, sliceElements, tensorFromRun } from './tensor-convert';

/** What the instance knows of its model when it forms and splits batches. */
export interface BatchModel {
  name: string;
  version: string;
  maxBatchSize: number;
  inputs: ReadonlyMap<string, ModelInput>;
  outputs: ReadonlyMap<string, ModelOutput>;
  /** Output names in config order (every output, when a request names none). */
  outputOrder: readonly string[];
}

/** Requests that can share one session run: same inputs, datatypes and non-batch shapes. */
export function groupCompatible(items: readonly ExecutionItem[], batching: boolean): ExecutionItem[][] {
  if (!batching || items.length <= 1) return items.map((i) => [i]);
  // Nearly always one group (the dynamic batcher forms compatible batches): checked against the
  // first request before any key is built.
  const first = items[0].request.inputs;
  let i = 1;
  while (i < items.length && sameInputs(first, items[i].request.inputs)) i++;
  if (i === items.length) return [items as ExecutionItem[]];
  const groups = new Map<string, ExecutionItem[]>();
  for (const item of items) {
    const key = item.request.inputs
      .map((t) => `${t.name}:${t.datatype}:${t.shape.slice(1).join('x')}`)
      .sort()
      .join('|');
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return [...groups.values()];
}

/** Whether two requests have the same inputs: names, datatypes and dims after the batch dim. */
function sameInputs(a: readonly Tensor[], b: readonly Tensor[]): boolean {
  if (a.length !== b.length) return false;
  for (const x of a) {
    let y: Tensor | undefined;
    for (const t of b) {
      if (t.name === x.name) {
        y = t;
        break;
      }
    }
    if (y === undefined || y.datatype !== x.datatype || y.shape.length !== x.shape.length) return false;
    for (let d = 1; d < x.shape.length; d++) if (y.shape[d] !== x.shape[d]) return false;
  }
  return true;
}

/** Each request's batch size (its first input's first dim); 1 for requests of non-batching models. */
export function batchSizes(items: readonly ExecutionItem[], batching: boolean): number[] {
  return items.map((i) => (batching ? (i.request.inputs[0]?.shape[0] ?? 1) : 1));
}

/** The session feeds of one group: inputs joined along dim 0 when batching, reshapes applied. */
export function buildFeeds(model: BatchModel, items: readonly ExecutionItem[], copy: boolean): RunTensor[] {
  const batching = model.maxBatchSize > 0;
  if (items.length === 1) {
    // One request: its tensors as they are (the dims of a feed are the request's shape unless the
    // config reshapes the input).
    return items[0].request.inputs.map((t) => {
      const type = ortTypeFor(t, model.name);
      const reshape = model.inputs.get(t.name)?.reshape?.shape;
      const dims = reshape ? (batching ? [t.shape[0], ...reshape] : [...reshape]) : t.shape;
      return { name: t.name, type, dims, data: joinData([t], type, copy) };
    });
  }
  const total = batchSizes(items, batching).reduce((a, b) => a + b, 0);
  return items[0].request.inputs.map((first) => {
    const parts: Tensor[] = items.map((i) => i.request.inputs.find((t) => t.name === first.name) ?? first);
    const type = ortTypeFor(first, model.name);
    const reshape = model.inputs.get(first.name)?.reshape?.shape;
    const inner = reshape ?? (batching ? first.shape.slice(1) : first.shape);
    const dims = batching ? [total, ...inner] : [...inner];
    return { name: first.name, type, dims, data: joinData(parts, type, copy) };
  });
}

/** Output names to fetch for a group: the union of what its requests ask for, in a stable order. */
export function fetchesFor(model: BatchModel, items: readonly ExecutionItem[]): string[] {
  const wanted = new Set<string>();
  for (const item of items) {
    for (const name of requestedNames(model, item)) wanted.add(name);
  }
  return model.outputOrder.filter((n) => wanted.has(n));
}

/** The outputs one request gets, in the order it asked for them (config order when it did not). */
export function requestedNames(model: BatchModel, item: ExecutionItem): readonly string[] {
  return item.request.outputs?.map((o) => o.name) ?? model.outputOrder;
}

/** Splits the session outputs back into one response per request. */
export function splitResponses(
  model: BatchModel,
  items: readonly ExecutionItem[],
  outputs: readonly RunTensor[],
): InferenceResponse[] {
  const batching = model.maxBatchSize > 0;
  const sizes = batchSizes(items, batching);
  const total = sizes.reduce((a, b) => a + b, 0);
  let offset = 0;
  return items.map((item, index) => {
    const size = sizes[index];
    const tensors = requestedNames(model, item).map((name) => {
      const out = outputNamed(outputs, name);
      if (!out) throw new Error(`ONNX Runtime returned no output '${name}'`);
      return batching ? batchSlice(model, out, offset, size, total) : reshaped(model, out, out.dims, out.data);
    });
    offset += size;
    return { id: item.request.id, modelName: model.name, modelVersion: model.version, outputs: tensors };
  });
}

/** A linear search: a model has a handful of outputs, and a Map per run cost more than it saved. */
function outputNamed(outputs: readonly RunTensor[], name: string): RunTensor | undefined {
  for (const o of outputs) if (o.name === name) return o;
  return undefined;
}

function batchSlice(model: BatchModel, out: RunTensor, offset: number, size: number, total: number): Tensor {
  if (out.dims[0] !== total) {
    throw new Error(`output '${out.name}' has batch dimension ${out.dims[0] ?? 'none'}, expected ${total}`);
  }
  if (offset === 0 && size === total) return reshaped(model, out, out.dims, out.data);
  const perItem = elementCount(out.dims.slice(1));
  const data = sliceElements(out.data, offset * perItem, (offset + size) * perItem);
  return reshaped(model, out, [size, ...out.dims.slice(1)], data);
}

/** Applies the config's `dims` to an output the model produces under a `reshape`. */
function reshaped(model: BatchModel, out: RunTensor, shape: number[], data: RunTensor['data']): Tensor {
  const config = model.outputs.get(out.name);
  const dims = config?.dims;
  if (config?.reshape && dims && dims.every((d) => d >= 0)) {
    const batched = model.maxBatchSize > 0;
    const target = batched ? [shape[0], ...dims] : [...dims];
    if (elementCount(target) === data.length) return tensorFromRun(out, target, data);
  }
  return tensorFromRun(out, shape, data);
}
