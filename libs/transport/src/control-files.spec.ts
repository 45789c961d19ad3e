import { decodeMessage, encodeMessage } from './codec';
import { controlFilesFromWire, controlFilesToWire } from './control-files';
import type { ControlMessage } from './messages';

describe('control files', () => {
  it('carry any bytes (views of a larger buffer too) through an encoded control message', () => {
    const big = new Uint8Array([9, 9, 0, 1, 2, 255, 0, 9]);
    const files = new Map([
      ['file:1/model.onnx', big.subarray(2, 7)],
      ['file:1/empty.bin', new Uint8Array(0)],
    ]);
    const message: ControlMessage = { kind: 'control', id: 'g:c1', replyTo: 'control:g', from: 'g', op: 'load', model: 'm', files: controlFilesToWire(files) };
    const back = decodeMessage(encodeMessage(message)) as ControlMessage;
    expect(controlFilesFromWire(back.files)).toEqual(new Map([
      ['file:1/model.onnx', new Uint8Array([0, 1, 2, 255, 0])],
      ['file:1/empty.bin', new Uint8Array(0)],
    ]));
    expect(controlFilesToWire(undefined)).toBeUndefined();
    expect(controlFilesFromWire(undefined)).toBeUndefined();
  });
});
