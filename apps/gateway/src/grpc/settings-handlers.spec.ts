import { encodeLogSettings, encodeTraceSettings, logUpdateOf, traceUpdateOf } from './settings-handlers';

describe('log settings conversion', () => {
  it('builds a partial update from the set choices', () => {
    expect(logUpdateOf({})).toBeUndefined();
    expect(
      logUpdateOf({
        log_info: { bool_param: false, parameter_choice: 'bool_param' },
        log_verbose_level: { uint32_param: 2, parameter_choice: 'uint32_param' },
        log_format: { string_param: 'ISO8601', parameter_choice: 'string_param' },
        unknown: { bool_param: true, parameter_choice: 'bool_param' },
      }),
    ).toEqual({ log_info: false, log_verbose_level: 2, log_format: 'ISO8601' });
  });
  it('rejects a value of the wrong kind', () => {
    expect(() => logUpdateOf({ log_info: { string_param: 'yes', parameter_choice: 'string_param' } })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARG', message: "invalid value type for 'log_info' parameter, expected bool_param." }),
    );
  });
  it('returns all six settings', () => {
    const out = encodeLogSettings({
      log_file: '',
      log_info: true,
      log_warning: true,
      log_error: false,
      log_verbose_level: 0,
      log_format: 'default',
    });
    expect(out.settings).toEqual({
      log_file: { string_param: '' },
      log_info: { bool_param: true },
      log_warning: { bool_param: true },
      log_error: { bool_param: false },
      log_verbose_level: { uint32_param: 0 },
      log_format: { string_param: 'default' },
    });
  });
});

describe('trace settings conversion', () => {
  it('maps values: lists for trace_level, strings otherwise, empty = clear', () => {
    expect(traceUpdateOf({})).toBeUndefined();
    expect(
      traceUpdateOf({
        trace_level: { value: ['TIMESTAMPS', 'TENSORS'] },
        trace_rate: { value: ['10'] },
        trace_count: { value: [] },
      }),
    ).toEqual({ trace_level: ['TIMESTAMPS', 'TENSORS'], trace_rate: '10', trace_count: null });
  });
  it('wraps every response value in a list', () => {
    expect(encodeTraceSettings({ trace_level: ['OFF'], trace_rate: '1000' }).settings).toEqual({
      trace_level: { value: ['OFF'] },
      trace_rate: { value: ['1000'] },
    });
  });
});
