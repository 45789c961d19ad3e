import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ModelConfig, ModelSequenceBatching, SequenceState } from '@nereid/model-config';
import type { ExecutionItem } from '@nereid/protocol';
import { isReclaimable, markReclaimable, RECLAIM_MIN_BYTES, type Tensor } from '@nereid/tensor';
import { FakeClock } from './clock';
import { createScheduler } from './scheduler';
import { CONTROLS, sequenceModel } from './sequence-spec-helpers';
import { ImplicitStates, MAX_INITIAL_STATE_BYTES } from './sequence-state';
import { settle } from './spec-helpers';

const ACC: SequenceState = { input_name: 'ACC_IN', output_name: 'ACC_OUT', data_type: 'TYPE_FP32', dims: [1] };

/** The accumulator a test model computes: ACC_OUT = ACC_IN + IN, and OUT = the new sum. */
function accumulate(item: ExecutionItem): Tensor[] {
  const get = (name: string) => item.request.inputs.find((t) => t.name === name);
  const acc = (get('ACC_IN')?.data[0] as number) + (get('IN')?.data[0] as number);
  const wanted = item.request.outputs?.map((o) => o.name) ?? [];
  return [
    { name: 'OUT', datatype: 'FP32', shape: [1, 1], data: Float32Array.of(acc) },
    { name: 'ACC_OUT', datatype: 'FP32', shape: [1, 1], data: Float32Array.of(acc) },
  ].filter((t) => wanted.includes(t.name)) as Tensor[];
}

/** OUT of each client response, by request id. */
function sums(log: ReturnType<typeof sequenceModel>['log']): Record<string, number> {
  const out: Record<string, number> = {};
  for (const e of log.events) if ('response' in e && e.response) out[e.id] = e.response.outputs.find((t) => t.name === 'OUT')?.data[0] as number;
  return out;
}

const config = (sb: ModelSequenceBatching): Partial<ModelConfig> => ({ output: [{ name: 'OUT', data_type: 'TYPE_FP32', dims: [1] }], sequence_batching: sb });

function valueModel(sb: ModelSequenceBatching, max = 4) {
  return sequenceModel(sb, { max, config: config(sb) });
}

describe('SequenceBatchScheduler implicit state', () => {
  for (const strategy of ['direct', 'oldest'] as const) {
    it(`carries each sequence's output state to its next request and resets it on START (${strategy})`, async () => {
      const sb: ModelSequenceBatching = { control_input: CONTROLS, state: [ACC], ...(strategy === 'oldest' ? { oldest: { max_candidate_sequences: 4 } } : {}) };
      const { ex, log, s, send } = valueModel(sb);
      /** Answers every execution not answered yet, as long as new ones come. */
      let answered = 0;
      const answer = async () => {
        while (answered < ex.batches.length) {
          ex.finish(answered++, accumulate);
          await settle();
        }
      };
      send('a1', 1n, { value: 1, start: true });
      send('b1', 2n, { value: 10, start: true });
      send('a2', 1n, { value: 2 });
      send('b2', 2n, { value: 20 });
      await answer();
      send('a3', 1n, { value: 3, start: true }); // a START on a live id: the sum starts again
      send('b3', 2n, { value: 30, end: true });
      await answer();
      expect(sums(log)).toEqual({ a1: 1, b1: 10, a2: 3, b2: 30, a3: 3, b3: 60 });
      // The client never sees the state output.
      for (const e of log.events) if ('response' in e) expect(e.response?.outputs.map((t) => t.name)).toEqual(['OUT']);
      // Backends are asked for the state output even though the client named no output.
      expect(ex.batches[0].items[0].request.outputs).toEqual([{ name: 'OUT' }, { name: 'ACC_OUT' }]);
      expect(s.pendingCount + s.inflightCount).toBe(0);
    });
  }

  it('gives padding rows zero state, never the state of the slot they fill', async () => {
    const { ex, send, finish } = valueModel({ control_input: CONTROLS, state: [ACC] });
    send('a1', 1n, { start: true });
    send('b1', 2n, { start: true });
    await finish(0, () => [{ name: 'ACC_OUT', datatype: 'FP32', shape: [1, 1], data: Float32Array.of(5) }]);
    await finish(1, () => [{ name: 'ACC_OUT', datatype: 'FP32', shape: [1, 1], data: Float32Array.of(7) }]);
    send('b2', 2n);
    const [pad, b2] = ex.batches[2].items.map((i) => i.request.inputs.find((t) => t.name === 'ACC_IN')?.data[0]);
    expect([ex.ids()[2], pad, b2]).toEqual([['pad', 'b2'], 0, 7]);
  });

  it('keeps a state output in the response when the client asked for it by name, and strips it otherwise', async () => {
    const { ex, log, s, finish, send } = valueModel({ state: [ACC] });
    const item = log.item({ id: 'named', inputs: { IN: [1, 1] } });
    Object.assign(item.request, { sequenceId: 3n, sequenceStart: true, outputs: [{ name: 'ACC_OUT' }] });
    s.enqueue(item);
    expect(ex.batches[0].items[0].request.outputs).toEqual([{ name: 'ACC_OUT' }]);
    await finish(0, () => [{ name: 'ACC_OUT', datatype: 'FP32', shape: [1, 1], data: Float32Array.of(4) }]);
    send('unnamed', 4n, { start: true });
    await finish(1, () => [
      { name: 'OUT', datatype: 'FP32', shape: [1, 1], data: Float32Array.of(1) },
      { name: 'ACC_OUT', datatype: 'FP32', shape: [1, 1], data: Float32Array.of(1) },
    ]);
    const outputs = log.events.map((e) => ('response' in e ? [e.id, e.response?.outputs.map((t) => t.name)] : e.id));
    expect(outputs).toEqual([
      ['named', ['ACC_OUT']],
      ['unnamed', ['OUT']],
    ]);
  });
});

describe('SequenceBatchScheduler implicit state and reclaimable outputs', () => {
  it('retains a state output the response also carries: the front door must not free what the next request reads', async () => {
    const { log, s, finish } = valueModel({ state: [ACC] });
    const item = log.item({ id: 'named', inputs: { IN: [1, 1] } });
    Object.assign(item.request, { sequenceId: 5n, sequenceStart: true, outputs: [{ name: 'ACC_OUT' }] });
    s.enqueue(item);
    const state = new Float32Array(RECLAIM_MIN_BYTES / 4).fill(4);
    markReclaimable(state);
    expect(isReclaimable(state)).toBe(true);
    await finish(0, () => [{ name: 'ACC_OUT', datatype: 'FP32', shape: [1, RECLAIM_MIN_BYTES / 4], data: state }]);
    expect(log.events.map((e) => ('response' in e ? e.response?.outputs.map((t) => t.data) : undefined))).toEqual([[state]]);
    expect(isReclaimable(state)).toBe(false);
  });
});

describe('ImplicitStates initial values', () => {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-state-'));
  fs.mkdirSync(path.join(folder, 'initial_state'));
  fs.writeFileSync(path.join(folder, 'initial_state', 'three.bin'), Buffer.from(Int32Array.of(1, 2, 3).buffer));
  fs.writeFileSync(path.join(folder, 'initial_state', 'short.bin'), Buffer.alloc(4));
  const strings = Buffer.concat([Buffer.from([2, 0, 0, 0]), Buffer.from('hi'), Buffer.from([0, 0, 0, 0])]);
  fs.writeFileSync(path.join(folder, 'initial_state', 'strings.bin'), strings);
  afterAll(() => fs.rmSync(folder, { recursive: true, force: true }));

  const initial = (state: SequenceState, max = 4): Tensor[] => {
    const out: Tensor[] = [];
    new ImplicitStates({ name: 'm', max_batch_size: max, sequence_batching: { state: [state] } }, folder).append(out, undefined);
    return out;
  };

  it('starts uninitialized states at zero with variable dims as 1 (batch dim 1 when the model batches)', () => {
    expect(initial({ input_name: 'S', output_name: 'O', data_type: 'TYPE_FP32', dims: [-1, 2] })).toEqual([
      { name: 'S', datatype: 'FP32', shape: [1, 1, 2], data: new Float32Array(2) },
    ]);
    expect(initial({ input_name: 'S', output_name: 'O', data_type: 'TYPE_STRING', dims: [2] }, 0)).toEqual([
      { name: 'S', datatype: 'BYTES', shape: [2], data: [new Uint8Array(0), new Uint8Array(0)] },
    ]);
  });

  it('reads zero_data and data_file initial states', () => {
    const zero = { input_name: 'S', output_name: 'O', data_type: 'TYPE_INT32', dims: [-1], initial_state: [{ name: 'z', data_type: 'TYPE_INT32', dims: [3], zero_data: true }] };
    expect(initial(zero)).toEqual([{ name: 'S', datatype: 'INT32', shape: [1, 3], data: new Int32Array(3) }]);
    const file = { ...zero, initial_state: [{ name: 'f', data_type: 'TYPE_INT32', dims: [3], data_file: 'three.bin' }] };
    expect(initial(file)[0].data).toEqual(Int32Array.of(1, 2, 3));
    const text = { input_name: 'S', output_name: 'O', data_type: 'TYPE_STRING', dims: [2], initial_state: [{ name: 't', data_type: 'TYPE_STRING', dims: [2], data_file: 'strings.bin' }] };
    expect(initial(text)[0].data).toEqual([Uint8Array.from(Buffer.from('hi')), new Uint8Array(0)]);
  });

  it("refuses bad initial states in Triton's words, and files outside initial_state/", () => {
    const base = { input_name: 'S', output_name: 'O', data_type: 'TYPE_INT32', dims: [3] };
    const bad = (init: object, dims = [3]) => () => initial({ ...base, dims, initial_state: [{ name: 'i', data_type: 'TYPE_INT32', dims: [3], ...init }] });
    expect(bad({ data_type: 'TYPE_FP32', zero_data: true })).toThrow(
      "The data type used for 'initial_state' field of state 'S' does not match the state data type.",
    );
    expect(bad({ name: '', zero_data: true })).toThrow("Field 'name' must be set when using initial_state for state input 'S'.");
    expect(bad({ zero_data: true }, [4])).toThrow("'initial_state' dim for input name 'S' doesn't match 'state' dim description. 3 != 4");
    expect(bad({ dims: [-1], zero_data: true }, [-1])).toThrow("'initial_state' field for state input name 'S' contains variable dimensions.");
    expect(bad({ data_file: 'short.bin' })).toThrow('initial_state setting expects 12 bytes, but the data provided from short.bin only has 4 bytes.');
    expect(bad({ data_file: 'missing.bin' })).toThrow("failed to read data_file 'missing.bin' of initial state 'i' for state input 'S' in model 'm': ENOENT");
    fs.writeFileSync(path.join(folder, 'outside.bin'), Buffer.alloc(12));
    expect(bad({ data_file: '../outside.bin' })).toThrow('is outside model directory');
    expect(() => initial({ ...base, initial_state: [{ name: 'a', zero_data: true }, { name: 'b', zero_data: true }] })).toThrow(
      "initial_state field for state input 'S' must contain exactly one or zero element. Found '2' elements.",
    );
  });

  it('sizes an initial state before allocating it: beyond MAX_INITIAL_STATE_BYTES or an exact count, INVALID_ARG', () => {
    const zeros = (data_type: string, dims: number[]) => () =>
      initial({ input_name: 'S', output_name: 'O', data_type, dims, initial_state: [{ name: 'z', data_type, dims, zero_data: true }] }, 0);
    // 8 M STRING elements are 32 MiB of lengths, allowed, and held as one shared empty element.
    const t0 = performance.now();
    const strings = zeros('TYPE_STRING', [8_000_000])()[0].data as Uint8Array[];
    expect(strings.length).toBe(8_000_000);
    expect(strings[0]).toBe(strings[7_999_999]);
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(zeros('TYPE_STRING', [100_000_000])).toThrow(
      "the initial state of state input 'S' in model 'm' with shape [100000000] takes 400000000 bytes, more than the 67108864 bytes an initial state may hold",
    );
    expect(zeros('TYPE_FP32', [MAX_INITIAL_STATE_BYTES / 4 + 1])).toThrow('more than the 67108864 bytes');
    expect(zeros('TYPE_INT32', [2147483647, 2147483647, 2147483647])).toThrow(
      "the shape [2147483647,2147483647,2147483647] of input 'S' for model 'm' has a byte size beyond 9007199254740991 bytes",
    );
    // Without an initial_state, the state's own dims (variable ones as 1) are bounded alike.
    expect(() => initial({ input_name: 'S', output_name: 'O', data_type: 'TYPE_FP64', dims: [-1, 1 << 30] })).toThrow(
      "with shape [1,1,1073741824] takes 8589934592 bytes",
    );
  });

  it('reads only the bytes a numeric state needs from its data_file, and refuses a BYTES file over the bound', () => {
    fs.writeFileSync(path.join(folder, 'initial_state', 'long.bin'), Buffer.from(Int32Array.of(7, 8, 9, 10, 11).buffer));
    const state = { input_name: 'S', output_name: 'O', data_type: 'TYPE_INT32', dims: [2] };
    expect(initial({ ...state, initial_state: [{ name: 'f', data_type: 'TYPE_INT32', dims: [2], data_file: 'long.bin' }] })[0].data).toEqual(Int32Array.of(7, 8));
    const big = path.join(folder, 'initial_state', 'big.bin');
    fs.closeSync(fs.openSync(big, 'w'));
    fs.truncateSync(big, MAX_INITIAL_STATE_BYTES + 1); // sparse: nothing is written
    const text = { input_name: 'S', output_name: 'O', data_type: 'TYPE_STRING', dims: [1] };
    expect(() => initial({ ...text, initial_state: [{ name: 't', data_type: 'TYPE_STRING', dims: [1], data_file: 'big.bin' }] })).toThrow(
      'takes 67108865 bytes, more than the 67108864 bytes an initial state may hold',
    );
  });

  it('fails the scheduler (and so the model load) when an initial state cannot be read', () => {
    const sb: ModelSequenceBatching = {
      state: [{ ...ACC, initial_state: [{ name: 'i', data_type: 'TYPE_FP32', dims: [1], data_file: 'missing.bin' }] }],
    };
    const make = () => createScheduler({ name: 'm', max_batch_size: 1, sequence_batching: sb }, { instanceCount: 1, execute: async () => undefined, clock: new FakeClock(), modelDir: folder });
    expect(make).toThrow("failed to read data_file 'missing.bin'");
  });
});
