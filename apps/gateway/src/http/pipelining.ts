import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Back-pressure for HTTP/1.1 pipelining: a client that sends request after request on one
 * connection without reading the answers stalls only itself.
 *
 * Node's HTTP server stops reading a connection when the answers already written wait in its
 * buffers, but it checks only as each request arrives. Inference answers come later (the model
 * runs first), so it found nothing written and read on: a client that never read took in 361,685
 * requests in 5 s, every one queued for its model (issue 16, attack 1). Here each connection has
 * at most `maxUnanswered` requests started and unanswered. The next one waits unstarted, and
 * reading stops until an earlier answer is written, in the same way Node itself stops it
 * (`socket._paused`, which also pauses the parser and keeps a body read from resuming the socket).
 *
 * A malformed request after valid pipelined ones is answered after them (400, then the connection
 * closes): the answers come back in the order of the requests, one per request.
 */

/** What Node's HTTP server keeps on a connection's socket to stop reading it (lib/_http_server.js). */
type ServerSocket = Socket & { _paused?: boolean; parser?: { pause(): void; resume(): void } | null };

interface ConnectionState {
  /** Requests received and not answered yet, in arrival order. */
  readonly open: Set<ServerResponse>;
  /** Requests received but not started (over the bound), in arrival order. */
  readonly waiting: Array<[IncomingMessage, ServerResponse]>;
  /** Requests started and not answered. */
  started: number;
  /** Reading stopped by this bound. */
  holding: boolean;
  /** A client error to answer once the complete requests before it are answered. */
  error?: { text: Buffer; before: Set<ServerResponse> };
}

const STATE = Symbol('nereid.pipeline');

type TrackedSocket = ServerSocket & { [STATE]?: ConnectionState };

export class PipelineBound {
  /** One listener for every response ('close' fires once, with the response as `this`). */
  private readonly onClose: (this: ServerResponse) => void;

  constructor(
    /** Answers a request (the server's request listener behind the bound). */
    private readonly dispatch: (req: IncomingMessage, res: ServerResponse) => void,
    /** Unanswered requests started per connection (a client that does not pipeline has one). */
    private readonly maxUnanswered: number,
  ) {
    const bound = this;
    this.onClose = function (this: ServerResponse) {
      bound.answered(this);
    };
  }

  /**
   * The server's request listener: each request is dispatched now, or once fewer than
   * `maxUnanswered` earlier requests of its connection wait for their answers.
   */
  readonly admit = (req: IncomingMessage, res: ServerResponse): void => {
    const socket = req.socket as TrackedSocket;
    const state = socket[STATE] ?? this.watch(socket);
    state.open.add(res);
    res.on('close', this.onClose);
    if (state.started < this.maxUnanswered && state.waiting.length === 0) {
      state.started++;
      this.dispatch(req, res);
      return;
    }
    state.waiting.push([req, res]);
    hold(socket, state);
  };

  /** Fastify's `clientErrorHandler`: a malformed or timed-out request, answered in its turn. */
  readonly clientError = (error: NodeJS.ErrnoException, rawSocket: Socket): void => {
    const socket = rawSocket as TrackedSocket;
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const state = socket[STATE] ?? this.watch(socket);
    if (state.error) return;
    // The requests that arrived whole are answered first; one still arriving never will be.
    const before = new Set<ServerResponse>();
    for (const res of state.open) if (res.req.complete) before.add(res);
    state.error = { text: clientErrorResponse(error.code), before };
    hold(socket, state);
    if (before.size === 0) closeWith(socket, state.error.text);
  };

  private watch(socket: TrackedSocket): ConnectionState {
    const state: ConnectionState = { open: new Set(), waiting: [], started: 0, holding: false };
    socket[STATE] = state;
    // Node resumes a paused connection when its write buffer drains; while over the bound,
    // stop it again before anything is read.
    socket.on('resume', () => {
      if (state.holding) hold(socket, state, true);
    });
    return state;
  }

  private answered(res: ServerResponse): void {
    const socket = res.req.socket as TrackedSocket | null;
    const state = socket?.[STATE];
    if (!socket || !state || !state.open.delete(res)) return;
    const error = state.error;
    if (error) {
      if (error.before.delete(res) && error.before.size === 0) closeWith(socket, error.text);
      // Requests not yet started still run (they came before the error).
    }
    if (socket.destroyed) {
      state.waiting.length = 0;
      return;
    }
    const unstarted = state.waiting.findIndex((w) => w[1] === res);
    if (unstarted === -1) state.started--;
    else state.waiting.splice(unstarted, 1);
    while (state.started < this.maxUnanswered && state.waiting.length > 0) {
      state.started++;
      const [req, next] = state.waiting.shift()!;
      this.dispatch(req, next);
    }
    if (state.holding && !error && state.waiting.length === 0) release(socket, state);
  }
}

function hold(socket: TrackedSocket, state: ConnectionState, force = false): void {
  if (state.holding && !force) return;
  state.holding = true;
  socket._paused = true;
  socket.parser?.pause();
  socket.pause();
}

function release(socket: TrackedSocket, state: ConnectionState): void {
  state.holding = false;
  // Answers still waiting in the write buffer: Node resumes the socket itself once it drains.
  if (socket.writableNeedDrain) return;
  socket._paused = false;
  socket.parser?.resume();
  socket.resume();
}

function closeWith(socket: Socket, text: Buffer): void {
  if (socket.destroyed) return;
  if (socket.writable) socket.write(text);
  socket.destroy();
}

const STATUS: Record<string, [number, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large'],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: [413, 'Payload Too Large'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout'],
};

/** Node's answers to a request it could not parse (and Fastify's), with Triton's error body. */
function clientErrorResponse(code: string | undefined): Buffer {
  const [status, reason] = STATUS[code ?? ''] ?? [400, 'Bad Request'];
  const body = JSON.stringify({ error: reason });
  return Buffer.from(
    `HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    'latin1',
  );
}
