import { InferenceError, toInferenceError, type InferenceRequest, type InferenceResponse } from '@nereid/protocol';
import type { Tensor } from '@nereid/tensor';
import type { InferFn } from '../backend';
import { BlobBuilder, MSG } from './frames';
import { encodeResponse, parseParameters } from './wire-responses';
import { decodeTensors, type ShmSettings, type WireTensor } from './wire-tensors';

/** A BLS call as the stub sends it (see _nereid_runtime.Runtime.submit_bls). */
interface BlsHeader {
  id: number;
  d: boolean;
  m: string;
  v: number;
  rid: string;
  fl: number;
  to: number;
  p: string;
  out: string[];
  in: WireTensor[];
  cidi?: string;
  cids?: string;
  /** `trace=request.trace()` of a request received in execute: `[batch id, index]` of that request. */
  tr?: [number, number];
}

export interface BlsPort {
  infer?: InferFn;
  /** Request `index` of batch `batch` handed to the stub and still open (a BLS call's parent). */
  requestOf?(batch: number, index: number): InferenceRequest | undefined;
  send(type: number, header: object, blob?: BlobBuilder): void;
  shm(): ShmSettings;
}

/** Serves the stub's BLS calls (`request.exec()` / `async_exec()`) through the server's InferFn. */
export class BlsBridge {
  private readonly calls = new Map<number, AbortController>();

  constructor(private readonly port: BlsPort) {}

  /** Decodes the call's inputs (in frame order), then runs it without blocking later frames. */
  async onRequest(raw: Record<string, unknown>, blob: Uint8Array): Promise<void> {
    const h = raw as unknown as BlsHeader;
    let inputs: Tensor[];
    try {
      inputs = await decodeTensors(h.in, blob, this.port.shm());
    } catch (e) {
      await this.reply(h.id, toInferenceError(e), true);
      return;
    }
    const controller = new AbortController();
    this.calls.set(h.id, controller);
    const request: InferenceRequest = {
      id: h.rid,
      modelName: h.m,
      modelVersion: h.v,
      inputs,
      outputs: h.out.length > 0 ? h.out.map((name) => ({ name })) : undefined,
      parameters: parseParameters(h.p) ?? {},
      sequenceId: h.cids !== undefined ? h.cids : BigInt(h.cidi ?? '0'),
      sequenceStart: (h.fl & 1) !== 0,
      sequenceEnd: (h.fl & 2) !== 0,
      priority: 0,
      timeoutUs: h.to,
      signal: controller.signal,
      // Traced as a child of the request whose trace the model passed (Triton's BLS tracing), else not at all.
      parentTrace: (h.tr && this.port.requestOf?.(h.tr[0], h.tr[1])?.trace) ?? null,
    };
    void this.run(h.id, h.d, request)
      .catch(() => undefined)
      .finally(() => this.calls.delete(h.id));
  }

  cancel(id: number): void {
    this.calls.get(id)?.abort();
  }

  abortAll(): void {
    for (const c of this.calls.values()) c.abort();
    this.calls.clear();
  }

  private async run(id: number, decoupled: boolean, request: InferenceRequest): Promise<void> {
    const infer = this.port.infer;
    if (!infer) {
      await this.reply(id, InferenceError.unavailable(`BLS is not available: model '${request.modelName}' cannot be called from this server`), true);
      return;
    }
    // Decoupled callee: forward responses as they come, holding one back so the last one carries the final flag.
    let forwarded = 0;
    let held: InferenceResponse | undefined;
    let chain: Promise<void> = Promise.resolve();
    const onResponse = decoupled
      ? (r: InferenceResponse): void => {
          if (held) {
            const prev = held;
            forwarded++;
            chain = chain.then(() => this.reply(id, prev, false));
          }
          held = r;
        }
      : undefined;
    try {
      const all = await infer(request, onResponse);
      await chain;
      const rest = decoupled ? all.slice(forwarded) : all.slice(-1);
      if (rest.length === 0) {
        if (!decoupled) throw InferenceError.internal(`model '${request.modelName}' sent no response`);
        await this.reply(id, undefined, true);
      }
      for (let i = 0; i < rest.length; i++) await this.reply(id, rest[i], i === rest.length - 1);
    } catch (e) {
      await chain.catch(() => undefined);
      await this.reply(id, toInferenceError(e), true);
    }
  }

  private async reply(id: number, response: InferenceResponse | InferenceError | undefined, final: boolean): Promise<void> {
    const blob = new BlobBuilder();
    const header: { id: number; f: boolean; r?: object } = { id, f: final };
    if (response !== undefined) {
      const { r, pending } = encodeResponse(response, blob, this.port.shm());
      if (pending) await pending;
      header.r = r;
    }
    this.port.send(MSG.BLS_RESULT, header, blob);
  }
}
