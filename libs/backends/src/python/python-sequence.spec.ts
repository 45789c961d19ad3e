import type { ModelConfig } from '@nereid/model-config';
import { PythonBackend } from './python-backend';
import { bytes, config, FIXTURES, i32, loadContext, request, run, text, values } from './testing';

/**
 * A python model as the sequence batcher drives it: control tensors and the implicit state input
 * arrive as ordinary inputs, the state output comes back (also when the request names no outputs),
 * and the request carries its correlation id and sequence flags (Triton's correlation_id() and
 * flags(): START = 1, END = 2).
 */
const backend = new PythonBackend();

const sequenceConfig: ModelConfig = config(
  'sequence_state',
  [['INPUT', 'TYPE_INT32', [1]]],
  [['OUTPUT', 'TYPE_INT32', [1]], ['REPORT', 'TYPE_STRING', [1]]],
  {
    max_batch_size: 8,
    sequence_batching: {
      control_input: [
        { name: 'START', control: [{ kind: 'CONTROL_SEQUENCE_START', int32_false_true: [0, 1] }] },
        { name: 'CORRID', control: [{ kind: 'CONTROL_SEQUENCE_CORRID', data_type: 'TYPE_STRING' }] },
      ],
      state: [{ input_name: 'ACC_IN', output_name: 'ACC_OUT', data_type: 'TYPE_INT32', dims: [1] }],
    },
  },
);

/** One row as the batcher hands it over: INPUT from the client, the rest from the server. */
function row(input: number, acc: number, id: bigint | string, start: boolean, end: boolean, outputs?: string[]) {
  return request(
    'sequence_state',
    [i32('INPUT', [input], [1, 1]), i32('START', [start ? 1 : 0], [1, 1]), bytes('CORRID', [String(id)], [1, 1]), i32('ACC_IN', [acc], [1, 1])],
    { sequenceId: id, sequenceStart: start, sequenceEnd: end, outputs: outputs?.map((name) => ({ name })) },
  );
}

describe('PythonBackend under the sequence batcher', () => {
  it('passes controls and state as inputs, returns the state output, and tells correlation_id() and flags()', async () => {
    const instance = await backend.loadInstance(loadContext(FIXTURES, sequenceConfig));
    try {
      const [first, second, third] = await run(instance, [
        row(5, 0, 'seq-a', true, false),
        row(7, 10, 18446744073709551615n, false, true, ['OUTPUT', 'ACC_OUT', 'REPORT']),
        row(1, 3, 12n, true, true, ['OUTPUT', 'ACC_OUT']),
      ]);
      for (const s of [first, second, third]) expect(s.error).toBeUndefined();

      // No outputs named: the config's and the state's.
      expect(first.responses[0].outputs.map((t) => t.name).sort()).toEqual(['ACC_OUT', 'OUTPUT', 'REPORT']);
      expect(values(first.output('ACC_OUT'))).toEqual([5]);
      expect(JSON.parse(text(first.output('REPORT'))[0])).toEqual({
        correlation_id: 'seq-a',
        flags: 1,
        corrid_input: 'seq-a',
        inputs: ['ACC_IN', 'CORRID', 'INPUT', 'START'],
        requested: ['ACC_OUT', 'OUTPUT', 'REPORT'],
      });

      expect(values(second.output('OUTPUT'))).toEqual([17]);
      expect(values(second.output('ACC_OUT'))).toEqual([17]);
      // A uint64 id beyond 2^53 arrives exact, END alone is flag 2.
      const report = text(second.output('REPORT'))[0];
      expect(report).toContain('"correlation_id": 18446744073709551615,');
      expect(JSON.parse(report)).toMatchObject({ flags: 2 });

      // Only what the request names comes back.
      expect(third.responses[0].outputs.map((t) => t.name).sort()).toEqual(['ACC_OUT', 'OUTPUT']);
      expect(values(third.output('ACC_OUT'))).toEqual([1]);
    } finally {
      await instance.unload();
    }
  });
});
