import { modelConfigToJson } from '@nereid/model-config';
import type { LoadContext } from '../backend';

/**
 * The `args` dict `initialize(self, args)` receives: every key Triton's stub passes, all strings.
 * `model_config` is the completed config in Triton's JSON form (every field, defaults included).
 */
export function initArgs(ctx: LoadContext): Record<string, string> {
  return {
    model_config: JSON.stringify(modelConfigToJson(ctx.config)),
    model_instance_kind: ctx.instance.kind.replace(/^KIND_/, ''),
    model_instance_name: ctx.instance.name,
    model_instance_device_id: String(ctx.instance.deviceId),
    model_repository: ctx.modelDir,
    model_version: String(ctx.version),
    model_name: ctx.config.name ?? '',
  };
}
