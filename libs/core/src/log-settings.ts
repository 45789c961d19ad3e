import { InferenceError } from '@nereid/protocol';
import type { LogSettings } from './core';
import { fileUnder } from './trace-paths';

/**
 * The settings an update of the logging extension (HTTP `/v2/logging`, gRPC LogSettings) changes,
 * every key checked before any is applied: an update with one bad key changes nothing (Triton
 * applies the keys it meets before the bad one; its error words are kept). A null key is ignored.
 * `logDir`: `--log-dir`, the only directory `log_file` may name a file in (none: 501, as Triton).
 */
export function checkLogUpdate(update: Partial<LogSettings>, logDir: string | undefined): Partial<LogSettings> {
  const changes: Partial<LogSettings> = {};
  if (update.log_file !== undefined && update.log_file !== null) {
    if (!logDir) throw InferenceError.unsupported('log file location can not be updated through network protocol');
    if (typeof update.log_file !== 'string') throw InferenceError.invalidArg(`expect string for 'log_file'`);
    // '' goes back to the console; any other name must be inside --log-dir.
    changes.log_file = update.log_file === '' ? '' : fileUnder(logDir, update.log_file, 'log_file', '--log-dir');
  }
  if (update.log_format !== undefined && update.log_format !== null) {
    if (update.log_format !== 'default' && update.log_format !== 'ISO8601' && update.log_format !== 'json') {
      throw InferenceError.unavailable(`invalid argument for --log_format, got: ${String(update.log_format)}`);
    }
    changes.log_format = update.log_format;
  }
  for (const k of ['log_info', 'log_warning', 'log_error'] as const) {
    const v = update[k];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'boolean') throw InferenceError.invalidArg(`expect boolean for '${k}'`);
    changes[k] = v;
  }
  const lv = update.log_verbose_level;
  if (lv !== undefined && lv !== null) {
    if (typeof lv !== 'number' || !Number.isInteger(lv) || lv < 0) {
      throw InferenceError.invalidArg(`expect unsigned integer for 'log_verbose_level'`);
    }
    changes.log_verbose_level = lv;
  }
  return changes;
}
