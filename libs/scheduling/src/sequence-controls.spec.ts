import type { ModelConfig, SequenceControl } from '@nereid/model-config';
import type { Tensor } from '@nereid/tensor';
import { corridData, SequenceControls } from './sequence-controls';
import { sequenceModel } from './sequence-spec-helpers';

function controls(list: { name: string; control: SequenceControl }[], max = 4): SequenceControls {
  const config: ModelConfig = { max_batch_size: max, sequence_batching: { control_input: list.map((c) => ({ name: c.name, control: [c.control] })) } };
  return new SequenceControls(config);
}

function row(c: SequenceControls, flags: { start?: boolean; end?: boolean; ready?: boolean }, corrid: bigint | string): Tensor[] {
  const out: Tensor[] = [];
  c.append(out, { start: flags.start === true, end: flags.end === true, ready: flags.ready !== false }, corrid);
  return out;
}

describe('SequenceControls', () => {
  it('writes INT32, FP32 and BOOL controls from their false/true lists', () => {
    const c = controls([
      { name: 'S', control: { kind: 'CONTROL_SEQUENCE_START', int32_false_true: [5, 7] } },
      { name: 'E', control: { kind: 'CONTROL_SEQUENCE_END', fp32_false_true: [0.5, 1.5] } },
      { name: 'R', control: { kind: 'CONTROL_SEQUENCE_READY', bool_false_true: [false, true] } },
    ]);
    expect(row(c, { start: true }, 1n)).toEqual([
      { name: 'S', datatype: 'INT32', shape: [1, 1], data: Int32Array.of(7) },
      { name: 'E', datatype: 'FP32', shape: [1, 1], data: Float32Array.of(0.5) },
      { name: 'R', datatype: 'BOOL', shape: [1, 1], data: Uint8Array.of(1) },
    ]);
    expect(row(c, { end: true }, 1n).map((t) => t.data[0])).toEqual([5, 1.5, 1]);
    expect(row(c, { start: true, end: true, ready: false }, 1n).map((t) => t.data[0])).toEqual([5, 0.5, 0]);
  });

  it('honours inverted false/true values (a model may want 1 for false)', () => {
    const c = controls([{ name: 'R', control: { kind: 'CONTROL_SEQUENCE_READY', bool_false_true: [true, false] } }]);
    expect(row(c, {}, 1n)[0].data[0]).toBe(0);
    expect(row(c, { ready: false }, 1n)[0].data[0]).toBe(1);
  });

  it('shapes controls [1] for a model that does not batch', () => {
    const c = controls([{ name: 'S', control: { kind: 'CONTROL_SEQUENCE_START', int32_false_true: [0, 1] } }], 0);
    expect(row(c, { start: true }, 1n)[0].shape).toEqual([1]);
  });

  it.each([
    ['TYPE_UINT64', 'UINT64', 2n ** 64n - 1n, 2n ** 64n - 1n],
    ['TYPE_INT64', 'INT64', 2n ** 64n - 1n, -1n],
    ['TYPE_UINT32', 'UINT32', 2n ** 40n + 7n, 7],
    ['TYPE_INT32', 'INT32', 2n ** 40n + 0xffffffffn, -1],
    ['TYPE_INT32', 'INT32', 123n, 123],
  ])('writes CORRID as %s (%s) keeping the low bits', (configType, datatype, id, value) => {
    const c = controls([{ name: 'C', control: { kind: 'CONTROL_SEQUENCE_CORRID', data_type: configType } }]);
    const [t] = row(c, {}, id);
    expect(t.datatype).toBe(datatype);
    expect(t.shape).toEqual([1, 1]);
    expect(t.data[0]).toBe(value);
  });

  it('writes a TYPE_STRING CORRID as one BYTES element, empty for padding rows', () => {
    const c = controls([{ name: 'C', control: { kind: 'CONTROL_SEQUENCE_CORRID', data_type: 'TYPE_STRING' } }]);
    const [t] = row(c, {}, 'séquence-7');
    expect(t.datatype).toBe('BYTES');
    expect(Buffer.from((t.data as Uint8Array[])[0]).toString('utf8')).toBe('séquence-7');
    expect(corridData('BYTES', 0n)).toEqual([new Uint8Array(0)]);
  });

  it('adds nothing for a model without controls', () => {
    expect(row(controls([]), { start: true }, 1n)).toEqual([]);
  });
});

describe('SequenceBatchScheduler request checks', () => {
  const UINT64_CORRID = [{ name: 'CORRID', control: [{ kind: 'CONTROL_SEQUENCE_CORRID', data_type: 'TYPE_UINT64' }] }];
  const STRING_CORRID = [{ name: 'CORRID', control: [{ kind: 'CONTROL_SEQUENCE_CORRID', data_type: 'TYPE_STRING' }] }];

  it("refuses a request without correlation id, with batch size > 1, or without START for an unknown id, in Triton's words", () => {
    const { ex, log, send } = sequenceModel({ control_input: UINT64_CORRID }, { max: 4 });
    send('none', 0n, { start: true });
    send('big', 1n, { start: true, inputs: { IN: [2, 1] } });
    send('nostart', 99n);
    expect(log.errors()).toEqual([
      { id: 'none', code: 'INVALID_ARG', message: "inference request to model 'm' must specify a non-zero or non-empty correlation ID" },
      {
        id: 'big',
        code: 'INVALID_ARG',
        message: "inference request to model 'm' must specify batch-size 1 due to requirements of sequence batcher",
      },
      {
        id: 'nostart',
        code: 'INVALID_ARG',
        message: "inference request for sequence 99 to model 'm' must specify the START flag on the first request of the sequence",
      },
    ]);
    expect(ex.batches).toHaveLength(0);
  });

  it('refuses a STRING id for a numeric CORRID and a numeric id for a TYPE_STRING CORRID', () => {
    const numeric = sequenceModel({ control_input: UINT64_CORRID });
    numeric.send('s', 'abc', { start: true });
    expect(numeric.log.errors()[0].message).toBe(
      "[request id: s] sequence batching control 'CORRID' data-type is 'BYTES', but model 'm' expects 'UINT64'",
    );
    const strings = sequenceModel({ control_input: STRING_CORRID });
    strings.send('n', 5n, { start: true });
    strings.send('ok', 'abc', { start: true });
    expect(strings.log.errors()).toEqual([
      { id: 'n', code: 'INVALID_ARG', message: "[request id: n] sequence batching control 'CORRID' data-type is 'UINT64', but model 'm' expects 'BYTES'" },
    ]);
    expect(strings.ex.rows(0)).toEqual([{ id: 'ok', padding: false, controls: { CORRID: 'abc' } }]);
  });

  it('prints a STRING id as sent in the START error, and keeps STRING and UINT64 ids apart', () => {
    const { log, ex, send } = sequenceModel({}, { max: 4 });
    send('a', '7', { start: true });
    send('b', 7n);
    send('c', 'x7');
    expect(log.errors().map((e) => e.message)).toEqual([
      "inference request for sequence 7 to model 'm' must specify the START flag on the first request of the sequence",
      "inference request for sequence x7 to model 'm' must specify the START flag on the first request of the sequence",
    ]);
    expect(ex.ids()).toEqual([['a']]);
  });
});
