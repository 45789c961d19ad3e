import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { aliasOf, ONNX_BFLOAT16, ONNX_FLOAT, wrapBf16Io } from './bf16-graph';
import { readOnnxModelInfo } from './onnx-model-info';
import { FIXTURES } from './onnxruntime.testing';

describe('wrapBf16Io', () => {
  it('carries the BF16 graph inputs and outputs as FLOAT and leaves the rest as it was', async () => {
    const model = await fs.readFile(path.join(FIXTURES, 'identity_types/1/model.onnx'));
    const before = readOnnxModelInfo(model);
    expect(before.inputs.find((v) => v.name === 'IN_BF16')?.elemType).toBe(ONNX_BFLOAT16);
    const after = readOnnxModelInfo(wrapBf16Io(model, ['IN_BF16'], ['OUT_BF16']));
    const rename = (n: string): string => (n === 'IN_BF16' || n === 'OUT_BF16' ? aliasOf(n) : n);
    expect(after.inputs.map((v) => v.name)).toEqual(before.inputs.map((v) => rename(v.name)));
    expect(after.outputs.map((v) => v.name)).toEqual(before.outputs.map((v) => rename(v.name)));
    const alias = after.inputs.find((v) => v.name === aliasOf('IN_BF16'))!;
    expect(alias).toMatchObject({ elemType: ONNX_FLOAT, dims: [-1, -1], dimParams: ['batch', 'n'] });
    expect(after.inputs.filter((v) => !v.name.startsWith('IN_BF16'))).toEqual(before.inputs.filter((v) => v.name !== 'IN_BF16'));
  });

  it('names a tensor that is not a graph input or output', async () => {
    const model = await fs.readFile(path.join(FIXTURES, 'identity_types/1/model.onnx'));
    expect(() => wrapBf16Io(model, ['NOPE'], [])).toThrow("'NOPE' is not a graph input or output of the model");
    expect(() => wrapBf16Io(new Uint8Array([0x08, 0x01]), ['X'], [])).toThrow('not an ONNX model: no graph found in ModelProto');
  });
});
