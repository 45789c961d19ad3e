import { modelConfigToJson } from '@nereid/model-config';
import { PythonBackend } from './python-backend';
import { bytes, config, f32, FIXTURES, loadContext, request, run, text, values, type LogLine } from './testing';

const backend = new PythonBackend();
const io = (name: string, t = 'TYPE_FP32', dims = [4]): [string, string, number[]] => [name, t, dims];

describe('PythonBackend: the pb_utils API seen by a model', () => {
  const probeConfig = config(
    'pb_utils_probe',
    [io('INPUT0'), io('TEXT', 'TYPE_STRING', [2])],
    [io('REPORT', 'TYPE_STRING', [1]), io('DOUBLED'), io('ECHO_TEXT', 'TYPE_STRING', [2]), io('UNREQUESTED', 'TYPE_FP32', [1])],
    { parameters: { greeting: { string_value: 'hello' } } },
  );
  const logs: LogLine[] = [];
  let report: Record<string, unknown>;
  let sink: Awaited<ReturnType<typeof run>>[number];

  beforeAll(async () => {
    const ctx = loadContext(FIXTURES, probeConfig, logs);
    const inst = await backend.loadInstance(ctx);
    [sink] = await run(inst, [
      request('pb_utils_probe', [f32('INPUT0', [1, 2, 3, 4]), bytes('TEXT', ['ab', 'cd'])], {
        id: 'req-7',
        sequenceId: 99n,
        sequenceStart: true,
        timeoutUs: 5000,
        parameters: { temperature: 0.5, name: 'x', flag: true, big: 12n },
        outputs: [{ name: 'REPORT' }, { name: 'DOUBLED' }, { name: 'ECHO_TEXT' }],
      }),
    ]);
    await inst.unload();
    expect(sink.error).toBeUndefined();
    report = JSON.parse(text(sink.output('REPORT'))[0]) as Record<string, unknown>;
  });

  it('passes every initialize args key', () => {
    const args = report.args as Record<string, string>;
    expect(Object.keys(args).sort()).toEqual([
      'model_config', 'model_instance_device_id', 'model_instance_kind', 'model_instance_name', 'model_name',
      'model_repository', 'model_version',
    ]);
    expect(args).toMatchObject({
      model_instance_kind: 'CPU', model_instance_name: 'pb_utils_probe_0_0', model_instance_device_id: '0',
      model_repository: `${FIXTURES}/pb_utils_probe`, model_version: '1', model_name: 'pb_utils_probe',
    });
    expect(JSON.parse(args.model_config)).toEqual(modelConfigToJson(probeConfig));
    expect(report).toMatchObject({ config_name: 'pb_utils_probe', config_param: 'hello' });
  });

  it('imports the model as <version>.model with the version dir on sys.path', () => {
    expect(report).toMatchObject({
      helper: 'helper-ok', plain_helper: 'helper-ok',
      model_dir: `${FIXTURES}/pb_utils_probe/1`, model_dir_at_init: `${FIXTURES}/pb_utils_probe/1`,
    });
  });

  it('exposes the request as Triton does', () => {
    expect(report).toMatchObject({
      request_id: 'req-7', correlation_id: 99, flags: 1, timeout: 5000,
      parameters: { temperature: 0.5, name: 'x', flag: true, big: 12 },
      requested: ['DOUBLED', 'ECHO_TEXT', 'REPORT'], is_cancelled: false, sender_cancelled: false,
      input_names: ['INPUT0', 'TEXT'], input_shape: [4], input_dtype_code: 11, text_dtype_code: 13,
      input_is_cpu: true, input_numpy_dtype: 'float32', input_writable: true,
      text_types: ['bytes', 'bytes'], text_values: ['ab', 'cd'], dlpack_roundtrip: true,
    });
  });

  it('implements the module functions and constants', () => {
    expect(report).toMatchObject({
      input_config: 'TYPE_FP32', output_config: [4], missing_config: null,
      string_to_numpy: true, string_to_numpy_string: true,
      numpy_to_triton: [11, 13, 13, 9], triton_to_numpy: ['float32', null],
      serialized: [2, 0, 0, 0, 97, 98, 1, 0, 0, 0, 99], deserialized: ['ab', 'c'], decoupled: false,
      flags_consts: [1, 2, 1, 1, 2], error_codes: [0, 1, 2, 3, 4, 5, 6, 7], error: ['nope', true, 1],
      response_probe: [false, null, { k: 1 }, 1, 'A'],
      unicode_rejected: 'TritonModelException: NumPy dtype is not supported.',
      empty_name_rejected: 'TritonModelException: Tensor name cannot be an empty string.',
      bls_in_initialize: "TritonModelException: BLS is only supported during the 'execute' function.",
      metric_value: 1, memory: [0, 1],
    });
    expect(String(report.float_param_rejected)).toContain('Expect parameters values to have type bool/int/str');
  });

  it('returns outputs filtered to the requested names, with response parameters', () => {
    expect(sink.responses[0].outputs.map((t) => t.name).sort()).toEqual(['DOUBLED', 'ECHO_TEXT', 'REPORT']);
    expect(values(sink.output('DOUBLED'))).toEqual([2, 4, 6, 8]);
    expect(text(sink.output('ECHO_TEXT'))).toEqual(['AB', 'CD']);
    expect(sink.responses[0].parameters).toEqual({ probe: true, count: 3, who: 'pb' });
  });

  it('passes every form of correlation id, several requests in one batch', async () => {
    const inst = await backend.loadInstance(loadContext(FIXTURES, probeConfig));
    const inputs = () => [f32('INPUT0', [1, 2, 3, 4]), bytes('TEXT', ['ab', 'cd'])];
    const ids = [0n, 2n ** 53n - 1n, 2n ** 60n + 3n, 'seq-a'];
    const sinks = await run(inst, ids.map((sequenceId) => request('pb_utils_probe', inputs(), { sequenceId })));
    await inst.unload();
    // The report is JSON text: compare the raw numbers (JSON.parse would round 2^60 + 3).
    const seen = sinks.map((s) => /"correlation_id": ("[^"]*"|\d+)/.exec(text(s.output('REPORT'))[0])?.[1]);
    expect(seen).toEqual(['0', String(2n ** 53n - 1n), String(2n ** 60n + 3n), '"seq-a"']);
  });

  it('sends Logger lines and prints to the log, tagged with file and line', () => {
    const find = (level: string, m: string) => logs.find((l) => l.level === level && l.message.endsWith(m));
    expect(find('info', 'probe initialized')?.message).toMatch(/^model\.py:\d+\] probe initialized$/);
    expect(find('info', 'info line')).toBeDefined();
    expect(find('warn', 'warn line')).toBeDefined();
    expect(find('error', 'error line')).toBeDefined();
    expect(find('verbose', 'verbose line')).toBeDefined();
    expect(find('info', 'plain log line')).toBeDefined();
    expect(logs).toContainEqual({ level: 'info', message: 'printed to stdout' });
  });
});

describe('PythonBackend.autoComplete', () => {
  it('fills inputs, outputs and batching from auto_complete_config', async () => {
    const logs: LogLine[] = [];
    const b = new PythonBackend({ log: (level, message) => logs.push({ level, message }) });
    const dir = `${FIXTURES}/auto_complete`;
    const done = await b.autoComplete({ config: { name: 'auto_complete', backend: 'python' }, modelDir: dir, versionDir: `${dir}/1`, defaultMaxBatchSize: 4 });
    expect(done).toMatchObject({
      name: 'auto_complete', backend: 'python', max_batch_size: 4, dynamic_batching: {},
      input: [
        { name: 'INPUT0', data_type: 'TYPE_FP32', dims: [4] },
        { name: 'INPUT1', data_type: 'TYPE_FP32', dims: [4] },
      ],
      output: [
        { name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [4] },
        { name: 'OUTPUT1', data_type: 'TYPE_FP32', dims: [4] },
      ],
    });
    const problems = done.parameters?.problems?.string_value ?? '';
    expect(problems).toContain('configuration expects datatype TYPE_FP32');
    expect(problems).toContain("contains property other than");
    expect(logs.some((l) => l.message.includes('auto-completing auto_complete'))).toBe(true);
  });

  it('passes a config through unchanged when the model has no auto_complete_config', async () => {
    const dir = `${FIXTURES}/identity`;
    const cfg = config('identity', [io('INPUT0', 'TYPE_FP32', [-1])], [io('OUTPUT0', 'TYPE_FP32', [-1])]);
    const done = await backend.autoComplete({ config: cfg, modelDir: dir, versionDir: `${dir}/1`, defaultMaxBatchSize: 4 });
    expect(done).toEqual(cfg);
  });
});
