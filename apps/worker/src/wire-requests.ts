import { InferenceError, type ExecutionStats, type InferenceRequest, type InferenceResponse } from '@nereid/protocol';
import type { ResponseMessage, WireRequest, WireResponse } from '@nereid/transport';

/**
 * Requests and responses as they cross between distributed roles (the transport's messages) and
 * as the core, schedulers and backends see them. Only data crosses: the request's id in the
 * cluster and the gateway that holds its client travel beside it, and the id its log lines carry
 * when the client gave none (`logId`: the one the gateway's log assigned, else the cluster's id).
 */
export function requestToWire(request: InferenceRequest, requestId: string, replyTo: string): WireRequest {
  const logId = request.logId;
  return {
    requestId,
    replyTo,
    clientId: request.id,
    // Not sent when it is the cluster's id: the receiver falls back to that (requestFromWire).
    logId: logId === requestId ? undefined : logId,
    modelName: request.modelName,
    modelVersion: request.modelVersion,
    inputs: request.inputs,
    outputs: request.outputs,
    parameters: request.parameters,
    correlationId: request.sequenceId,
    flags: { sequenceStart: request.sequenceStart, sequenceEnd: request.sequenceEnd, padding: request.padding },
    priority: request.priority,
    timeoutUs: request.timeoutUs,
  };
}

export function requestFromWire(wire: WireRequest, signal?: AbortSignal): InferenceRequest {
  const request: InferenceRequest = {
    id: wire.clientId,
    // The gateway's, else (no client id either) the cluster-unique transport id: a per-process
    // counter here would give two workers' requests the same id.
    logId: wire.logId ?? (wire.clientId === '' ? wire.requestId : undefined),
    modelName: wire.modelName,
    modelVersion: wire.modelVersion,
    inputs: wire.inputs,
    outputs: wire.outputs,
    parameters: wire.parameters,
    sequenceId: wire.correlationId,
    sequenceStart: wire.flags.sequenceStart,
    sequenceEnd: wire.flags.sequenceEnd,
    priority: wire.priority,
    timeoutUs: wire.timeoutUs,
    signal,
  };
  if (wire.flags.padding) request.padding = true;
  return request;
}

export function responseToWire(response: InferenceResponse): WireResponse {
  const out: WireResponse = { id: response.id, modelName: response.modelName, modelVersion: response.modelVersion, outputs: response.outputs };
  if (response.parameters) out.parameters = response.parameters;
  return out;
}

export function responseFromWire(wire: WireResponse): InferenceResponse {
  return { id: wire.id, modelName: wire.modelName, modelVersion: wire.modelVersion, outputs: wire.outputs, parameters: wire.parameters };
}

export function errorFromWire(message: ResponseMessage): InferenceError {
  return new InferenceError(message.error!.code, message.error!.message);
}

/**
 * Execution statistics carry performance.now() times, which are the sending process's own: they
 * cross as wall-clock milliseconds (performance.timeOrigin added) and come back to the
 * receiver's clock (exact on one machine; as good as the clocks' sync across machines).
 */
export function statsToWire(stats: ExecutionStats): ExecutionStats {
  return { ...stats, execStart: stats.execStart + performance.timeOrigin };
}

export function statsFromWire(stats: ExecutionStats): ExecutionStats {
  return { ...stats, execStart: stats.execStart - performance.timeOrigin };
}
