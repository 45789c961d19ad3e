import { newInferenceRequest, type ExecutionItem } from '@nereid/protocol';
import type { Tensor } from '@nereid/tensor';
import { groupCompatible } from './batch';

function tensor(name: string, shape: number[], datatype = 'FP32'): Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  return { name, datatype, shape, data: new Float32Array(n) } as Tensor;
}

function item(id: string, inputs: Tensor[]): ExecutionItem {
  const request = newInferenceRequest('m', -1);
  request.id = id;
  request.inputs = inputs;
  return { request, sink: { send: () => undefined, fail: () => undefined } };
}

const ids = (groups: ExecutionItem[][]): string[][] => groups.map((g) => g.map((i) => i.request.id));

describe('groupCompatible', () => {
  it('keeps requests with the same inputs (any batch dim, any input order) in one group', () => {
    const items = [
      item('a', [tensor('X', [1, 4]), tensor('Y', [1, 2])]),
      item('b', [tensor('Y', [3, 2]), tensor('X', [3, 4])]),
      item('c', [tensor('X', [2, 4]), tensor('Y', [2, 2])]),
    ];
    expect(ids(groupCompatible(items, true))).toEqual([['a', 'b', 'c']]);
  });

  it('splits requests whose datatype, inner dims, rank or input names differ, keeping their order within a group', () => {
    const items = [
      item('a', [tensor('X', [1, 4])]),
      item('dims', [tensor('X', [1, 8])]),
      item('b', [tensor('X', [2, 4])]),
      item('type', [tensor('X', [1, 4], 'INT32')]),
      item('rank', [tensor('X', [1, 2, 2])]),
      item('name', [tensor('Z', [1, 4])]),
      item('c', [tensor('X', [1, 4])]),
    ];
    expect(ids(groupCompatible(items, true))).toEqual([['a', 'b', 'c'], ['dims'], ['type'], ['rank'], ['name']]);
  });

  it('one request per group when the model does not batch, and no group for no request', () => {
    const items = [item('a', [tensor('X', [4])]), item('b', [tensor('X', [4])])];
    expect(ids(groupCompatible(items, false))).toEqual([['a'], ['b']]);
    expect(groupCompatible([], true)).toEqual([]);
  });
});
