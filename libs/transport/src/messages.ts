import type { ComputeDurations, ErrorCode, ExecutionStats, Parameters, RequestedOutput } from '@nereid/protocol';
import type { Tensor } from '@nereid/tensor';
import type { ModelKey } from './channels';

/**
 * The messages that cross between the roles (gateway, scheduler, worker). Each is plain data: no
 * callback, promise, response sink or AbortSignal, so the in-memory port can pass it by reference
 * and the Redis port can serialise it (codec.ts). Where a request came from is a gateway id
 * (`replyTo`), where its responses go is that gateway's mailbox, and a client that goes away is a
 * `cancel` message: the ResponseRouter (response-router.ts) turns these back into live waiters.
 * MLServer's `parallel/messages.py` is the model for this set.
 */

/** One request of a batch, as a worker needs it. */
export interface WireRequest {
  /** The transport's id of the request, unique in the cluster (the gateway id and a counter). */
  requestId: string;
  /** The gateway whose mailbox receives the responses. */
  replyTo: string;
  /** The client's own id ('' when none). */
  clientId: string;
  /**
   * The id the gateway's log gave a request the client sent none for (its access line, its
   * verbose lines), so that the lines written about it elsewhere carry the same. Absent when none
   * was assigned, or when it is `requestId`: a receiver uses `requestId` (unique in the cluster) for
   * a request with neither a client id nor a log id. At most LOG_ID_MAX characters.
   */
  logId?: string;
  modelName: string;
  /** -1: the highest READY version. */
  modelVersion: number;
  inputs: Tensor[];
  /** Absent: every output of the model. */
  outputs?: RequestedOutput[];
  parameters: Parameters;
  /** Sequence correlation id; 0 / '' = not in a sequence. */
  correlationId: bigint | string;
  flags: RequestFlags;
  /** 0 = the model's default. */
  priority: number;
  /** Microseconds; 0 = none. */
  timeoutUs: number;
}

export interface RequestFlags {
  sequenceStart: boolean;
  sequenceEnd: boolean;
  /** A row the sequence batcher adds to fill an empty slot: executed, never answered. */
  padding?: boolean;
}

/**
 * The most requests a gateway puts in one request-queue message (a turn's requests for a version).
 * A scheduler reads ahead a number of messages, so this bounds how many requests that is.
 */
export const MAX_REQUESTS_PER_MESSAGE = 32;

/** Most characters of a request's `logId` (the codec refuses a longer one). */
export const LOG_ID_MAX = 256;

/** A batch the scheduler hands to one slot of one instance of a model on a worker. */
export interface ExecuteBatchMessage {
  kind: 'execute-batch';
  batchId: string;
  key: ModelKey;
  instance: number;
  slot: number;
  requests: WireRequest[];
  /** The scheduler's lease on the model's queue when it dispatched (fencing): stale ones are ignored. */
  fence?: number;
  /**
   * The mailbox that receives the batch's responses instead of each request's gateway: the
   * scheduler's, for a model with implicit sequence state (it keeps the state outputs and passes
   * the rest on to the gateway).
   */
  answerTo?: string;
  /**
   * Further batches for the same work queue, dispatched in the same turn of the scheduler's event
   * loop (one message per turn, not per batch): each runs as if it had come alone, and the
   * message is acked once all of them are done. Never nested. Absent: just this one.
   */
  more?: ExecuteBatchMessage[];
}

/** What a model answered to one request: tensors, or an error. */
export interface ResponseMessage {
  kind: 'response';
  requestId: string;
  /** The last message for the request. */
  final: boolean;
  /** Absent with an error, and on a decoupled model's flag-only final message. */
  response?: WireResponse;
  error?: WireError;
  /** What executing the request cost (sent once, with or before the final message). */
  stats?: ExecutionStats;
}

export interface WireResponse {
  id: string;
  modelName: string;
  modelVersion: string;
  outputs: Tensor[];
  parameters?: Parameters;
}

export interface WireError {
  code: ErrorCode;
  message: string;
}

/** The client of a request went away: whoever holds it stops working on it. */
export interface CancelMessage {
  kind: 'cancel';
  requestId: string;
}

/** One batch's end: its statistics (Triton's batch statistics) and how many requests it held. */
export interface BatchEnd {
  batchId: string;
  /** Inferences in the execution: the sum of its requests' batch sizes. */
  batchSize: number;
  requestCount: number;
  compute: ComputeDurations;
}

/**
 * Batches of one model version are done on a worker: the first one's report, and `more` for the
 * others that ended in the same turn of the worker's event loop (one message per turn, not per
 * batch; absent: just the one).
 */
export interface BatchDoneMessage extends BatchEnd {
  kind: 'batch-done';
  key: ModelKey;
  workerId: string;
  more?: BatchEnd[];
}

/** A worker (or, with `role: 'gateway'`, a gateway) is alive: what it hosts and how busy it is. */
export interface HeartbeatMessage {
  kind: 'heartbeat';
  /** The sender's id (a gateway's id when `role` is 'gateway'). */
  workerId: string;
  /** Absent: a worker. Gateways heartbeat too, so that a cluster-wide query knows whom to wait for. */
  role?: 'worker' | 'gateway';
  /** Wall-clock milliseconds (Date.now()) when sent. */
  at: number;
  /** Loaded model keys with their instance counts. */
  models: Array<{ key: ModelKey; instances: number }>;
  devices: { gpus: number };
  /** Batches running or queued on the worker. */
  load: number;
}

export type LifecycleMessageState = 'LOADING' | 'READY' | 'UNLOADING' | 'UNAVAILABLE';

/** A model version changed state (the core's lifecycle events, carried between processes). */
export interface LifecycleMessage {
  kind: 'lifecycle';
  model: string;
  version: number;
  state: LifecycleMessageState;
  /** Why a version is UNAVAILABLE; '' otherwise. */
  reason: string;
  /** The runtime (`<name>/<version>/<generation>`); absent when none was created. */
  key?: ModelKey;
}

/**
 * The repository and statistics extensions across the cluster: a gateway broadcasts what a client
 * asked of it (load, unload) or what it needs from every process (statistics, the index), and
 * each worker and gateway that hears it answers to `replyTo` with a ControlReplyMessage.
 */
export interface ControlMessage {
  kind: 'control';
  /** Unique per question (the asking gateway's id and a counter). */
  id: string;
  /** The mailbox the answers go to. */
  replyTo: string;
  /** The asking process: it does not answer itself. */
  from: string;
  op: 'load' | 'unload' | 'stats' | 'index';
  /** Only processes of this role act and answer; absent: every process. */
  to?: 'worker' | 'gateway';
  /** The model ('' with `stats`: every model). */
  model: string;
  /** `stats`: the version asked for, -1 every version. */
  version?: number;
  /** `load`: ModelConfig JSON text overriding config.pbtxt. */
  config?: string;
  /** `load`: override files, `file:<version>/<path>` → base64 content. */
  files?: Array<[string, string]>;
  /** `unload`: also unload the models loaded for this ensemble. */
  unloadDependents?: boolean;
}

/** One process's answer to a ControlMessage. `stats` and `index` are the statistics extension's and the index's JSON rows. */
export interface ControlReplyMessage {
  kind: 'control-reply';
  id: string;
  /** The answering process's id and role. */
  member: string;
  role: 'worker' | 'gateway';
  /** The operation failed there, with the embedded server's code and words. */
  error?: WireError;
  stats?: Array<Record<string, unknown>>;
  index?: Array<{ name: string; version?: string; state?: string; reason?: string }>;
}

export type TransportMessage =
  | ExecuteBatchMessage
  | ResponseMessage
  | CancelMessage
  | BatchDoneMessage
  | HeartbeatMessage
  | LifecycleMessage
  | ControlMessage
  | ControlReplyMessage;

export type MessageKind = TransportMessage['kind'];

export const MESSAGE_KINDS: readonly MessageKind[] = [
  'execute-batch', 'response', 'cancel', 'batch-done', 'heartbeat', 'lifecycle', 'control', 'control-reply',
];
