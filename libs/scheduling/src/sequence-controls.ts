import type { ModelConfig, SequenceControl } from '@nereid/model-config';
import { type DataType, type Tensor, type TensorData } from '@nereid/tensor';

/** Where a request stands in its sequence, as the control tensors say it. */
export interface RowFlags {
  start: boolean;
  end: boolean;
  /** False for a padding row of a direct batch. */
  ready: boolean;
}

/** A START, END or READY control: its tensor with the false and the true value, built once. */
interface BooleanControl {
  whenFalse: Tensor;
  whenTrue: Tensor;
}

interface CorridControl {
  name: string;
  datatype: DataType;
}

const CORRID_DATATYPES: Readonly<Record<string, DataType>> = {
  TYPE_UINT64: 'UINT64',
  TYPE_INT64: 'INT64',
  TYPE_UINT32: 'UINT32',
  TYPE_INT32: 'INT32',
  TYPE_STRING: 'BYTES',
};

const UTF8 = new TextEncoder();

function booleanValue(control: SequenceControl, which: 0 | 1, shape: number[], name: string): Tensor {
  if ((control.int32_false_true ?? []).length > 0) {
    return { name, datatype: 'INT32', shape, data: Int32Array.of(Number(control.int32_false_true?.[which] ?? which)) };
  }
  if ((control.fp32_false_true ?? []).length > 0) {
    return { name, datatype: 'FP32', shape, data: Float32Array.of(Number(control.fp32_false_true?.[which] ?? which)) };
  }
  const value = control.bool_false_true?.[which] ?? which === 1;
  return { name, datatype: 'BOOL', shape, data: Uint8Array.of(value ? 1 : 0) };
}

/**
 * The control inputs of a sequence model (`sequence_batching.control_input`), filled by the server
 * for every row the backend sees (model-config.md §9): START, END and READY as INT32, FP32 or BOOL
 * from their `*_false_true` lists, and CORRID as the correlation id in the control's `data_type`
 * (32-bit types keep the low 32 bits; TYPE_STRING is one BYTES element). Each tensor holds one
 * element, shaped `[1, 1]` when the model batches and `[1]` when it does not. Rows carry them in
 * Triton's order: START, END, READY, CORRID.
 */
export class SequenceControls {
  private readonly start: BooleanControl | undefined;
  private readonly end: BooleanControl | undefined;
  private readonly ready: BooleanControl | undefined;
  private readonly corrid: CorridControl | undefined;
  private readonly shape: number[];
  /** Names of every control tensor. */
  readonly names: ReadonlySet<string>;

  constructor(config: ModelConfig) {
    this.shape = (config.max_batch_size ?? 0) > 0 ? [1, 1] : [1];
    const names = new Set<string>();
    const booleans = new Map<string, BooleanControl>();
    let corrid: CorridControl | undefined;
    for (const input of config.sequence_batching?.control_input ?? []) {
      const name = input.name ?? '';
      for (const control of input.control ?? []) {
        names.add(name);
        const kind = control.kind ?? 'CONTROL_SEQUENCE_START';
        if (kind === 'CONTROL_SEQUENCE_CORRID') {
          corrid = { name, datatype: CORRID_DATATYPES[control.data_type ?? ''] ?? 'UINT64' };
        } else {
          booleans.set(kind, {
            whenFalse: booleanValue(control, 0, this.shape, name),
            whenTrue: booleanValue(control, 1, this.shape, name),
          });
        }
      }
    }
    this.start = booleans.get('CONTROL_SEQUENCE_START');
    this.end = booleans.get('CONTROL_SEQUENCE_END');
    this.ready = booleans.get('CONTROL_SEQUENCE_READY');
    this.corrid = corrid;
    this.names = names;
  }

  /** The CORRID control's tensor name and datatype, if the model has one. */
  get correlationControl(): Readonly<CorridControl> | undefined {
    return this.corrid;
  }

  /**
   * Appends the control tensors of one row to `out`. `corrid` is the row's correlation id (0n for
   * a padding row: a model cannot trust any input of a row that is not ready). The boolean tensors
   * are shared between rows: backends read inputs, never write them.
   */
  append(out: Tensor[], flags: RowFlags, corrid: bigint | string): void {
    if (this.start) out.push(flags.ready && flags.start ? this.start.whenTrue : this.start.whenFalse);
    if (this.end) out.push(flags.ready && flags.end ? this.end.whenTrue : this.end.whenFalse);
    if (this.ready) out.push(flags.ready ? this.ready.whenTrue : this.ready.whenFalse);
    if (this.corrid) out.push({ name: this.corrid.name, datatype: this.corrid.datatype, shape: this.shape, data: corridData(this.corrid.datatype, corrid) });
  }
}

/** The correlation id as one element of `datatype`. */
export function corridData(datatype: DataType, corrid: bigint | string): TensorData {
  if (datatype === 'BYTES') return [typeof corrid === 'string' ? UTF8.encode(corrid) : new Uint8Array(0)];
  const id = typeof corrid === 'bigint' ? corrid : 0n;
  switch (datatype) {
    case 'INT64':
      return BigInt64Array.of(BigInt.asIntN(64, id));
    case 'UINT32':
      return Uint32Array.of(Number(BigInt.asUintN(32, id)));
    case 'INT32':
      return Int32Array.of(Number(BigInt.asIntN(32, id)));
    default:
      return BigUint64Array.of(BigInt.asUintN(64, id));
  }
}
