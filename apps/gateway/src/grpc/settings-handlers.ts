import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import type { InferenceCore, LogSettings, TraceSettings } from '@nereid/core';
import { GrpcRequestErrors, setOwn } from '@nereid/protocol';
import { unary } from './unary';
import type { WireLogSettingValue, WireLogSettingsRequest, WireTraceSettingRequest } from './wire-types';

type LogChoice = NonNullable<WireLogSettingValue['parameter_choice']>;

const LOG_KEY_TYPES: Readonly<Record<keyof LogSettings, LogChoice>> = {
  log_file: 'string_param',
  log_info: 'bool_param',
  log_warning: 'bool_param',
  log_error: 'bool_param',
  log_verbose_level: 'uint32_param',
  log_format: 'string_param',
};

function isLogKey(key: string): key is keyof LogSettings {
  return Object.prototype.hasOwnProperty.call(LOG_KEY_TYPES, key);
}

/**
 * LogSettings request → the core's partial update; undefined when nothing is set. Unknown keys are
 * ignored; a value of the wrong kind is INVALID_ARG.
 */
export function logUpdateOf(settings: Record<string, WireLogSettingValue>): Partial<LogSettings> | undefined {
  const update: Record<string, unknown> = {};
  let any = false;
  for (const key of Object.keys(settings)) {
    const v = settings[key];
    if (!isLogKey(key) || v.parameter_choice === undefined) continue;
    const expected = LOG_KEY_TYPES[key];
    if (v.parameter_choice !== expected) throw GrpcRequestErrors.parameterType(key, expected);
    update[key] = v[expected];
    any = true;
  }
  return any ? (update as Partial<LogSettings>) : undefined;
}

/** All six log settings, each in its SettingValue choice. */
export function encodeLogSettings(s: LogSettings): { settings: Record<string, WireLogSettingValue> } {
  return {
    settings: {
      log_file: { string_param: s.log_file },
      log_info: { bool_param: s.log_info },
      log_warning: { bool_param: s.log_warning },
      log_error: { bool_param: s.log_error },
      log_verbose_level: { uint32_param: s.log_verbose_level },
      log_format: { string_param: s.log_format },
    },
  };
}

/**
 * TraceSetting request → the core's update (the HTTP JSON form): an empty value list clears the
 * setting (null), `trace_level` stays a list, other settings are single strings.
 */
export function traceUpdateOf(settings: Record<string, { value: string[] }>): Record<string, unknown> | undefined {
  const keys = Object.keys(settings);
  if (keys.length === 0) return undefined;
  const update: Record<string, unknown> = {};
  for (const key of keys) {
    const values = settings[key].value;
    setOwn(update, key, values.length === 0 ? null : key === 'trace_level' || values.length > 1 ? values : values[0]);
  }
  return update;
}

export function encodeTraceSettings(s: TraceSettings): { settings: Record<string, { value: string[] }> } {
  const settings: Record<string, { value: string[] }> = {};
  for (const key of Object.keys(s)) {
    const v = s[key];
    settings[key] = { value: Array.isArray(v) ? v : [v] };
  }
  return { settings };
}

/** Trace and logging extension RPCs. */
export function settingsHandlers(core: InferenceCore): UntypedServiceImplementation {
  return {
    TraceSetting: unary((r: WireTraceSettingRequest) =>
      encodeTraceSettings(core.traceSettings(r.model_name, traceUpdateOf(r.settings))),
    ),
    LogSettings: unary((r: WireLogSettingsRequest) => encodeLogSettings(core.logSettings(logUpdateOf(r.settings)))),
  };
}
