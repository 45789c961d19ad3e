import { InferenceError } from '@nereid/protocol';
import type { Backend, LoadContext, ModelInstance } from '../backend';
import { EnsembleInstance } from './ensemble-instance';

/** `platform: "ensemble"`: composing models are called through the server, like BLS. */
export class EnsembleBackend implements Backend {
  readonly name = 'ensemble';
  readonly defaultModelFilename = '';

  async loadInstance(ctx: LoadContext): Promise<ModelInstance> {
    if (!ctx.infer) throw InferenceError.internal(`ensemble '${ctx.config.name}' needs the server's infer function`);
    return new EnsembleInstance(ctx.config, ctx.infer);
  }
}
