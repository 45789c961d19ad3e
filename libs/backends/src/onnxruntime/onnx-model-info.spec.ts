import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { readOnnxModelInfo } from './onnx-model-info';

const ROOT = path.resolve(__dirname, '../../../..');
const model = (rel: string): Uint8Array => readFileSync(path.join(ROOT, rel, '1', 'model.onnx'));

describe('readOnnxModelInfo', () => {
  it('reads names, element types and symbolic dims of the simple model', () => {
    const info = readOnnxModelInfo(model('models/simple'));
    expect(info.inputs).toEqual([
      { name: 'INPUT0', isTensor: true, elemType: 6, dims: [-1, 16], dimParams: ['batch', ''] },
      { name: 'INPUT1', isTensor: true, elemType: 6, dims: [-1, 16], dimParams: ['batch', ''] },
    ]);
    expect(info.outputs.map((o) => o.name)).toEqual(['OUTPUT0', 'OUTPUT1']);
  });

  it('keeps fixed dims and leaves initializers out of the inputs', () => {
    const info = readOnnxModelInfo(model('test/fixtures/onnx/fixed_scale'));
    expect(info.inputs).toEqual([{ name: 'X', isTensor: true, elemType: 1, dims: [2, 3], dimParams: ['', ''] }]);
    expect(info.outputs[0]).toMatchObject({ name: 'Y', dims: [2, 3] });
  });

  it('reads the weights-heavy MLP without trouble', () => {
    const info = readOnnxModelInfo(model('models/mlp'));
    expect(info.inputs).toEqual([{ name: 'INPUT', isTensor: true, elemType: 1, dims: [-1, 512], dimParams: ['batch', ''] }]);
    expect(info.outputs.map((o) => o.name)).toEqual(['OUTPUT']);
  });

  it('rejects bytes that are not a ModelProto', () => {
    expect(() => readOnnxModelInfo(new TextEncoder().encode('this is not an onnx model'))).toThrow(/ONNX model/);
    expect(() => readOnnxModelInfo(new Uint8Array([0x3a, 0x05, 0x01]))).toThrow(/truncated/);
  });
});
