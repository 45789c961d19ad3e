import { spawnSync } from 'node:child_process';
import type { Tensor } from '@nereid/tensor';
import type { ModelInstance } from '../backend';
import { PythonBackend } from './python-backend';
import { PYTHON_DIR } from './stub-process';
import { config, FIXTURES, loadContext, request, run } from './testing';

/** One tensor of every numeric datatype, with values that show a lost or reinterpreted bit. */
function everyNumericType(n: number): Tensor[] {
  const pick = <T>(values: T[]) => Array.from({ length: n }, (_, i) => values[i % values.length]);
  return [
    { name: 'BOOL', datatype: 'BOOL', shape: [n], data: Uint8Array.from(pick([1, 0, 0, 1])) },
    { name: 'UINT8', datatype: 'UINT8', shape: [n], data: Uint8Array.from(pick([0, 1, 0x7f, 0xff])) },
    { name: 'UINT16', datatype: 'UINT16', shape: [n], data: Uint16Array.from(pick([0, 1, 0x8000, 0xffff])) },
    { name: 'UINT32', datatype: 'UINT32', shape: [n], data: Uint32Array.from(pick([0, 1, 0x80000000, 0xffffffff])) },
    { name: 'UINT64', datatype: 'UINT64', shape: [n], data: BigUint64Array.from(pick([0n, 1n, 1n << 63n, (1n << 64n) - 1n])) },
    { name: 'INT8', datatype: 'INT8', shape: [n], data: Int8Array.from(pick([0, -1, 127, -128])) },
    { name: 'INT16', datatype: 'INT16', shape: [n], data: Int16Array.from(pick([0, -1, 32767, -32768])) },
    { name: 'INT32', datatype: 'INT32', shape: [n], data: Int32Array.from(pick([0, -1, 2147483647, -2147483648])) },
    { name: 'INT64', datatype: 'INT64', shape: [n], data: BigInt64Array.from(pick([0n, -1n, (1n << 63n) - 1n, -(1n << 63n)])) },
    // FP16 and BF16 as raw patterns: 1.0, -2.0, a NaN with a payload, -0, all ones (a negative NaN)
    { name: 'FP16', datatype: 'FP16', shape: [n], data: Uint16Array.from(pick([0x3c00, 0xc000, 0x7e01, 0x8000, 0xffff])) },
    { name: 'FP32', datatype: 'FP32', shape: [n], data: Float32Array.from(pick([0, -1.5, 3.4e38, -0])) },
    { name: 'FP64', datatype: 'FP64', shape: [n], data: Float64Array.from(pick([0, -1.5, 1.7e308, Number.MIN_VALUE])) },
    { name: 'BF16', datatype: 'BF16', shape: [n], data: Uint16Array.from(pick([0x3f80, 0xc000, 0x7fc1, 0x8000, 0xffff])) },
  ];
}

const bytesOf = (t: Tensor | undefined): Buffer => {
  if (!t || Array.isArray(t.data)) throw new Error(`not a numeric tensor: ${t?.name}`);
  return Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
};

describe('PythonBackend: tensors through DLPack', () => {
  const backend = new PythonBackend();
  let inst: ModelInstance;
  beforeAll(async () => {
    const cfg = config('dlpack_identity', everyNumericType(1).map((t) => [t.name, `TYPE_${t.datatype}`, [-1]]), []);
    inst = await backend.loadInstance(loadContext(FIXTURES, cfg));
  });
  afterAll(() => inst.unload());

  it.each([
    ['inline', 5],
    ['through shared-memory files', 40_000], // 80 KB of BF16: above the 64 KiB threshold
  ])('round-trips every numeric datatype bit for bit, BF16 included (%s)', async (_how, n) => {
    const inputs = everyNumericType(n);
    const [s] = await run(inst, [request('dlpack_identity', inputs)]);
    expect(s.error).toBeUndefined();
    for (const input of inputs) {
      for (const way of ['DLPACK', 'OBJECT']) {
        const out = s.output(`${input.name}_${way}`);
        expect({ name: out?.name, datatype: out?.datatype, shape: out?.shape }).toEqual({ name: `${input.name}_${way}`, datatype: input.datatype, shape: [n] });
        expect(bytesOf(out).equals(bytesOf(input))).toBe(true);
      }
      if (input.datatype === 'BF16') continue;
      const viaNumpy = s.output(`${input.name}_NUMPY`);
      expect(viaNumpy?.datatype).toBe(input.datatype);
      expect(bytesOf(viaNumpy).equals(bytesOf(input))).toBe(true);
    }
    // BF16 has no numpy type: as_numpy() refuses it with Triton's words
    expect(s.output('BF16_NUMPY')).toBeUndefined();
    expect(JSON.parse(String(s.responses[0].parameters?.as_numpy_errors))).toEqual({
      BF16: 'Tensor dtype is BF16 and cannot be converted to NumPy. Use to_dlpack() and from_dlpack() instead.',
    });
  });
});

/** Runs python code with Nereid's pb_utils modules importable; returns what it printed. */
function python(lines: string[]): string {
  const script = [`import sys; sys.path.insert(0, ${JSON.stringify(PYTHON_DIR)})`, ...lines].join('\n');
  const r = spawnSync('python3', ['-c', script], { encoding: 'utf8' });
  expect(r.stderr).toBe('');
  return r.stdout.trim();
}

describe('pb_utils.Tensor and DLPack (in python)', () => {
  const prelude = [
    'import ctypes, gc, json',
    'import numpy as np',
    'import _nereid_dlpack',
    'from _nereid_tensor import Tensor, _wrap',
    'from _nereid_errors import TritonModelException',
    'ctypes.pythonapi.PyCapsule_GetPointer.restype = ctypes.c_void_p',
    'ctypes.pythonapi.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]',
    'def dtype_of(capsule):',
    '    # DLTensor: void* data, DLDevice (2 x int32), int32 ndim, then DLDataType {u8 code, u8 bits, u16 lanes}',
    '    address = ctypes.pythonapi.PyCapsule_GetPointer(capsule, b"dltensor")',
    '    raw = ctypes.string_at(address + 20, 4)',
    '    return [raw[0], raw[1], int.from_bytes(raw[2:], "little")]',
    'def error(fn):',
    '    try:',
    '        fn()',
    '    except TritonModelException as e:',
    '        return str(e)',
    'bf16 = _wrap("IN", np.array([0x3f80, 0x7fc1, 0x8000], dtype=np.uint16), "BF16")',
  ];

  it('exports BF16 as a "dltensor" capsule of DLPack bfloat16 (code 4, bits 16, lanes 1) and imports it as BF16', () => {
    const out = python([
      ...prelude,
      'capsule = bf16.to_dlpack()',
      'back = Tensor.from_dlpack("OUT", capsule)',
      'print(json.dumps([type(capsule).__name__, dtype_of(bf16.to_dlpack()), back.triton_dtype(), back.shape(),',
      '    bytes(back._array.data) == bytes(bf16._array.data), back._array.ctypes.data == bf16._array.ctypes.data,',
      '    bf16.__dlpack_device__(), error(back.as_numpy)]))',
    ]);
    expect(JSON.parse(out)).toEqual([
      'PyCapsule', [4, 16, 1], 14, [3], true, true, [1, 0],
      'Tensor dtype is BF16 and cannot be converted to NumPy. Use to_dlpack() and from_dlpack() instead.',
    ]);
  });

  it('exports each numeric datatype with its DLPack type and accepts other producers (numpy, DLPack 1.x capsules)', () => {
    const out = python([
      ...prelude,
      'report = {}',
      'for t in (np.bool_, np.uint8, np.uint16, np.uint32, np.uint64, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32, np.float64):',
      '    a = np.arange(6).astype(t).reshape(2, 3)',
      '    x = Tensor("X", a)',
      '    from_numpy = Tensor.from_dlpack("N", a)',
      '    versioned = Tensor.from_dlpack("V", a.__dlpack__(max_version=(1, 0)))',
      '    ok = all(y.as_numpy().dtype == a.dtype and (y.as_numpy() == a).all() for y in (from_numpy, versioned))',
      '    report[x._wire] = [dtype_of(x.to_dlpack()), ok, (np.from_dlpack(x) == a).all().item()]',
      'print(json.dumps(report))',
    ]);
    expect(JSON.parse(out)).toEqual({
      BOOL: [[6, 8, 1], true, true], UINT8: [[1, 8, 1], true, true], UINT16: [[1, 16, 1], true, true],
      UINT32: [[1, 32, 1], true, true], UINT64: [[1, 64, 1], true, true], INT8: [[0, 8, 1], true, true],
      INT16: [[0, 16, 1], true, true], INT32: [[0, 32, 1], true, true], INT64: [[0, 64, 1], true, true],
      FP16: [[2, 16, 1], true, true], FP32: [[2, 32, 1], true, true], FP64: [[2, 64, 1], true, true],
    });
  });

  it('says clearly what it cannot carry', () => {
    const out = python([
      ...prelude,
      'capsule = bf16.to_dlpack()',
      'Tensor.from_dlpack("A", capsule)',
      'print(json.dumps([',
      '    error(lambda: Tensor.from_dlpack("B", capsule)),',
      '    error(lambda: Tensor.from_dlpack("S", np.arange(6, dtype=np.float32)[::2])),',
      '    error(lambda: Tensor.from_dlpack("C", np.zeros(2, np.complex64))),',
      '    error(lambda: Tensor.from_dlpack("L", [1.0, 2.0])),',
      '    error(lambda: Tensor.from_dlpack("", bf16)),',
      '    error(lambda: Tensor("T", np.array([b"x"], dtype=np.object_)).to_dlpack()),',
      ']))',
    ]);
    expect(JSON.parse(out)).toEqual([
      'DLPack capsule was already consumed: a capsule can be imported only once.',
      'DLPack tensor is not contiguous. Only contiguous DLPack tensors that are stored in C-Order are supported.',
      'DLPack data type (code 5, bits 64, lanes 1) is not supported by the python backend.',
      'Provided tensor is not supported. Tensor must be a DLPack capsule or have `__dlpack__` and `__dlpack_device__` attributes',
      'Tensor name cannot be an empty string.',
      'DLPack does not have support for string tensors.',
    ]);
  });

  it('keeps exported memory alive while a consumer holds it and lets it go afterwards', () => {
    const out = python([
      ...prelude,
      'src = np.array([0x3f80, 0x4000], dtype=np.uint16)',
      'kept = Tensor.from_dlpack("K", _wrap("S", src, "BF16").to_dlpack())',
      'src_address = src.ctypes.data',
      'del src; gc.collect()',
      'alive = [kept._array.ctypes.data == src_address, kept._array.tolist(), len(_nereid_dlpack._exported)]',
      'del kept; gc.collect()',
      'unconsumed = bf16.to_dlpack(); del unconsumed',
      'numpy_refused = False',
      'try:',
      '    np.from_dlpack(bf16)  # numpy has no bfloat16: it refuses the capsule, with its own error',
      'except Exception:',
      '    numpy_refused = True',
      'last = bf16.to_dlpack()  # each export first drops the capsules nobody holds or consumed',
      'print(json.dumps([alive, numpy_refused, len(_nereid_dlpack._exported)]))',
    ]);
    expect(JSON.parse(out)).toEqual([[true, [0x3f80, 0x4000], 1], true, 1]);
  });
});
