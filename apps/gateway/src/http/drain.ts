import type { Server, ServerResponse } from 'node:http';

/**
 * Graceful shutdown of the HTTP front door: once draining, every response that has not sent its
 * headers yet (the requests in flight, and any that arrive later on an open keep-alive connection)
 * carries `Connection: close`, so Node closes each connection right after its current answer.
 */
class HttpDrain {
  private draining = false;
  private readonly open = new Set<ServerResponse>();
  /** One listener for every response ('close' fires once, with the response as `this`): no closure per request. */
  private readonly forget: (this: ServerResponse) => void;

  constructor() {
    const open = this.open;
    this.forget = function (this: ServerResponse) {
      open.delete(this);
    };
  }

  /** Called for every request as it arrives. */
  track(res: ServerResponse): void {
    if (this.draining) {
      res.setHeader('Connection', 'close');
      return;
    }
    this.open.add(res);
    res.on('close', this.forget);
  }

  /** Marks the responses in flight, and every later one, as the last of their connection. */
  begin(): void {
    this.draining = true;
    for (const res of this.open) {
      if (!res.headersSent) res.setHeader('Connection', 'close');
    }
    this.open.clear();
  }
}

/**
 * Tracks every request of `server` and returns its close: draining starts (in-flight and later
 * responses close their connections), then `close` stops the listener and waits for the connections
 * to end. Calling it again returns the same promise.
 */
export function drainingClose(server: Server, close: () => Promise<void>): () => Promise<void> {
  const drain = new HttpDrain();
  server.prependListener('request', (_req, res: ServerResponse) => drain.track(res));
  let closing: Promise<void> | undefined;
  return () => {
    drain.begin();
    return (closing ??= close());
  };
}
