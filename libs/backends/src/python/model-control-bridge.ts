import { InferenceError, toInferenceError } from '@nereid/protocol';
import type { ModelControl } from '../model-control';
import { MSG } from './frames';
import { decodeTensors, type ShmSettings, type WireTensor } from './wire-tensors';

/** A MODEL_CONTROL frame's header (see libs/backends/python/_nereid_model_control.py). */
interface ControlHeader {
  id: number;
  op: 'load' | 'unload' | 'ready';
  m: string;
  /** load: config JSON text ("" for none) and the override files, one UINT8 tensor each. */
  c?: string;
  f?: WireTensor[];
  /** unload: unload_dependents. */
  ud?: boolean;
  /** ready: the version as the model gave it ("" for the server's choice). */
  v?: string;
}

export interface ModelControlPort {
  models?: ModelControl;
  /** The calling model: it may not load or unload itself (its own load or unload would wait for it). */
  modelName: string;
  send(type: number, header: object): void;
  shm(): ShmSettings;
}

/**
 * `model_version` as the python backend reads it (`GetModelVersionFromString`): "" for the
 * server's choice (-1), else a non-negative integer. The python backend's words.
 */
export function versionOf(text: string): number {
  if (text === '') return -1;
  if (!/^\s*[+-]?\d+/.test(text)) {
    throw InferenceError.invalidArg(
      `failed to get model version from specified version string '${text}' (details: stol), version should be an integral value > 0`,
    );
  }
  const version = parseInt(text, 10);
  if (version < 0 || !Number.isSafeInteger(version)) {
    throw InferenceError.invalidArg(`failed to get model version from specified version string '${text}', version should be an integral value > 0`);
  }
  return version;
}

/**
 * Serves the stub's `pb_utils.load_model` / `unload_model` / `is_model_ready` calls through the
 * server's ModelControl. A call's answer is `{id, e: message}` when it failed (the stub raises
 * "Failed to load model: <message>" and the like), else `{id}` (`r`: the readiness). A load may
 * take seconds: it runs without holding back the instance's later frames.
 */
export class ModelControlBridge {
  constructor(private readonly port: ModelControlPort) {}

  async onRequest(raw: Record<string, unknown>, blob: Uint8Array): Promise<void> {
    const h = raw as unknown as ControlHeader;
    let files: Map<string, Uint8Array>;
    try {
      files = new Map();
      for (const t of await decodeTensors(h.f ?? [], blob, this.port.shm())) {
        if (!(t.data instanceof Uint8Array)) throw InferenceError.internal(`python stub sent file '${t.name}' as another type than UINT8`);
        files.set(t.name, t.data);
      }
    } catch (e) {
      this.port.send(MSG.MODEL_CONTROL_RESULT, { id: h.id, e: toInferenceError(e).message });
      return;
    }
    void this.run(h, files).then(
      (answer) => this.port.send(MSG.MODEL_CONTROL_RESULT, { id: h.id, ...answer }),
      (e) => this.port.send(MSG.MODEL_CONTROL_RESULT, { id: h.id, e: toInferenceError(e).message }),
    );
  }

  private async run(h: ControlHeader, files: Map<string, Uint8Array>): Promise<{ r?: boolean }> {
    const models = this.port.models;
    if (!models) throw InferenceError.unavailable('model management is not available in this server');
    switch (h.op) {
      case 'load':
        this.checkNotSelf(h.m);
        await models.load(h.m, h.c ?? '', files);
        return {};
      case 'unload':
        this.checkNotSelf(h.m);
        await models.unload(h.m, h.ud === true);
        return {};
      case 'ready':
        return { r: models.isReady(h.m, versionOf(h.v ?? '')) };
      default:
        throw InferenceError.invalidArg(`unknown model management request '${String(h.op)}'`);
    }
  }

  /** Nereid's own: the calling model's own (re)load or unload would wait for the call itself. */
  private checkNotSelf(name: string): void {
    if (name === this.port.modelName) throw InferenceError.invalidArg(`model '${name}' cannot load or unload itself`);
  }
}
