import type { LogSettings } from './core';
import { checkLogUpdate } from './log-settings';

describe('checkLogUpdate', () => {
  it('gives the changes of a good update, null keys ignored', () => {
    expect(checkLogUpdate({ log_format: 'ISO8601', log_info: false, log_verbose_level: 2, log_error: null as never }, undefined)).toEqual({
      log_format: 'ISO8601',
      log_info: false,
      log_verbose_level: 2,
    });
  });

  it('throws for an update with a bad key however good the others, so nothing is applied', () => {
    const settings: LogSettings = { log_file: '', log_info: true, log_warning: true, log_error: true, log_verbose_level: 0, log_format: 'default' };
    const before = { ...settings };
    const apply = (update: Partial<LogSettings>) => Object.assign(settings, checkLogUpdate(update, '/tmp'));
    expect(() => apply({ log_format: 'json', log_info: false, log_verbose_level: -1 })).toThrow("expect unsigned integer for 'log_verbose_level'");
    expect(() => apply({ log_file: 'x.log', log_warning: 'no' as never })).toThrow("expect boolean for 'log_warning'");
    expect(() => apply({ log_verbose_level: 1, log_format: 'yaml' as never })).toThrow('invalid argument for --log_format, got: yaml');
    expect(settings).toEqual(before);
  });
});
