import type { handleBidiStreamingCall, ServerDuplexStream } from '@grpc/grpc-js';
import type { InferenceCore, ResponseObserver, SystemSharedMemory } from '@nereid/core';
import { toInferenceError, type InferenceError, type InferenceResponse } from '@nereid/protocol';
import { toServiceError } from './grpc-status';
import { decodeInferRequest, releaseSharedMemory, type DecodedInferRequest } from './infer-request';
import { encodeInferResponse } from './infer-response';
import type { RequestLog } from '../access-log';
import { releaseOf } from './message-budget';
import { grpcIngress, grpcLogArrival } from './trace-ingress';
import type { WireModelInferRequest, WireModelStreamInferResponse, WireParameters } from './wire-types';

type Call = ServerDuplexStream<WireModelInferRequest, WireModelStreamInferResponse>;


const FINAL: WireParameters = { triton_final_response: { bool_param: true } };
const NOT_FINAL: WireParameters = { triton_final_response: { bool_param: false } };

/**
 * Metadata `triton_grpc_error: true` when the stream opens: the first error ends the stream with its
 * gRPC status instead of travelling in `error_message`.
 */
function wantsGrpcErrors(call: Call): boolean {
  const v = call.metadata.get('triton_grpc_error')[0];
  return typeof v === 'string' && v.toLowerCase() === 'true';
}

/**
 * One ModelStreamInfer stream. Requests run concurrently; responses are written as they complete
 * (clients match them by `id`); every response carries `triton_final_response`. Errors travel in
 * `error_message` and the stream stays open. The client half-closing ends the stream once every
 * pending request has finished; a cancel or disconnect aborts the pending requests' signal.
 */
class InferStream {
  private readonly controller = new AbortController();
  private readonly grpcErrors: boolean;
  private pending = 0;
  private inputEnded = false;
  private closed = false;
  /** Reading stopped: answers not taken by the client. */
  private held = false;
  private writesBacked = false;

  constructor(
    private readonly core: InferenceCore,
    private readonly call: Call,
    private readonly sharedMemory: SystemSharedMemory | undefined,
    /** Request ids on verbose log lines; none: no request lines. */
    private readonly log?: RequestLog,
    /** `--max-output-size` (output-size.ts); none: its default. */
    private readonly maxOutputBytes?: number,
  ) {
    this.grpcErrors = wantsGrpcErrors(call);
  }

  start(): void {
    this.call.on('data', (msg: WireModelInferRequest) => this.onRequest(msg));
    this.call.on('end', () => {
      this.inputEnded = true;
      this.finishIfDone();
    });
    this.call.on('cancelled', () => this.abort());
    this.call.on('error', () => this.abort());
  }

  private abort(): void {
    this.closed = true;
    this.controller.abort();
  }

  private onRequest(msg: WireModelInferRequest): void {
    if (this.closed) return;
    // The message's share of the budget of request bytes, charged as it arrived (message-budget.ts).
    const release = releaseOf(msg);
    let decoded: DecodedInferRequest;
    try {
      decoded = decodeInferRequest(msg, this.sharedMemory);
      decoded.request.signal = this.controller.signal;
      if (this.core.tracing) decoded.request.ingress = grpcIngress(this.call.metadata);
    } catch (e) {
      release();
      // Rejected before execution: the response names only the request id.
      this.sendError(toInferenceError(e), { id: msg.id });
      return;
    }
    this.pending++;
    try {
      this.core.infer(decoded.request, this.observer(msg, decoded, grpcLogArrival(this.log, decoded.request, msg), release));
    } catch (e) {
      this.pending--;
      release();
      releaseSharedMemory(decoded);
      this.sendError(toInferenceError(e), { id: msg.id });
      this.finishIfDone();
    }
  }

  private observer(msg: WireModelInferRequest, decoded: DecodedInferRequest, id: string, release: () => void): ResponseObserver {
    let done = false;
    let lastVersion = msg.model_version;
    const complete = (): void => {
      if (done) return;
      done = true;
      release();
      releaseSharedMemory(decoded);
      decoded.request.trace?.release();
      this.pending--;
      this.finishIfDone();
    };
    return {
      onResponse: (response: InferenceResponse | undefined, final: boolean) => {
        if (done) return;
        const trace = decoded.request.trace;
        trace?.mark('GRPC_SEND_START');
        if (response) {
          lastVersion = response.modelVersion;
          // An encoding failure is thrown back to the core: it counts the request as failed and
          // answers it through onError (caught here, the request counted as a success).
          const encoded = encodeInferResponse(response, final ? FINAL : NOT_FINAL, decoded.sharedMemory, this.maxOutputBytes);
          this.write({ error_message: '', infer_response: encoded });
        } else if (final && decoded.enableEmptyFinalResponse) {
          this.write({
            error_message: '',
            infer_response: { id: msg.id, model_name: msg.model_name, model_version: lastVersion, parameters: FINAL },
          });
        }
        trace?.mark('GRPC_SEND_END');
        if (final) complete();
      },
      onError: (error: InferenceError) => {
        if (done) return;
        if (this.log?.verbose) this.log.request('verbose', id, `infer failed: ${error.message}`);
        // Failed during execution: id, model name and version as sent, and the final flag.
        this.sendError(error, {
          id: msg.id,
          model_name: msg.model_name,
          model_version: msg.model_version,
          parameters: FINAL,
        });
        complete();
      },
    };
  }

  private sendError(error: InferenceError, inferResponse: WireModelStreamInferResponse['infer_response']): void {
    if (this.closed) return;
    if (this.grpcErrors) {
      this.abort();
      this.call.emit('error', toServiceError(error));
      return;
    }
    this.write({ error_message: error.message, infer_response: inferResponse });
  }

  private write(msg: WireModelStreamInferResponse): void {
    if (this.closed || this.call.write(msg)) return;
    // The client does not take the answers as fast as they come: read no more until it does.
    if (!this.writesBacked) {
      this.writesBacked = true;
      this.call.once('drain', () => {
        this.writesBacked = false;
        this.releaseIfRoom();
      });
    }
    this.hold();
  }

  /**
   * Back-pressure: the stream stops pulling requests (grpc-js stops reading the HTTP/2 stream once
   * its small read buffer is full, and flow control then holds the client) while its answers wait
   * unread. A client that does not read stalls only itself. The number of requests pending is not
   * bounded here: a stream multiplexes sequences, and holding the next request of a sequence that
   * owns a slot while a backlogged one waits for that slot would stall both until the idle timeout
   * (queue policies bound what waits).
   */
  private hold(): void {
    if (this.held) return;
    this.held = true;
    this.call.pause();
  }

  private releaseIfRoom(): void {
    if (!this.held || this.writesBacked || this.closed) return;
    this.held = false;
    this.call.resume();
  }

  private finishIfDone(): void {
    if (this.inputEnded && this.pending === 0 && !this.closed) {
      this.closed = true;
      this.call.end();
    }
  }
}

export function handleStreamInfer(
  core: InferenceCore,
  sharedMemory?: SystemSharedMemory,
  log?: RequestLog,
  maxOutputBytes?: number,
): handleBidiStreamingCall<WireModelInferRequest, WireModelStreamInferResponse> {
  return (call) => new InferStream(core, call, sharedMemory, log, maxOutputBytes).start();
}
