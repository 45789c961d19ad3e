import type * as net from 'node:net';

/**
 * One budget of open connections for both front doors (`--http-max-connections`, within three
 * quarters of the open-file limit: http-limits.ts `connectionCap`). Each door admits a connection as
 * it is accepted and the budget counts it until it closes. The HTTP door alone was counted before:
 * 1,100 silent connections to the gRPC port under `ulimit -n 1024` took every descriptor, HTTP
 * refused, and node died of an EMFILE thrown from a timer (issue 16).
 *
 * When the budget is full, a new connection takes the place of the oldest one that is still silent
 * (it has not sent the first bytes of its protocol: any byte for HTTP, the HTTP/2 preface for gRPC),
 * which is closed; only when none is silent is the new one closed instead. So silent connections,
 * which the header timeout closes anyway, cannot keep new clients out while they last.
 */
export class ConnectionBudget {
  /** The connections counted now. */
  private readonly counted = new Set<net.Socket>();
  /** Connections that may still be silent, oldest first, with the bytes each must send to have begun. */
  private readonly maybeSilent = new Map<net.Socket, number>();
  /** Connections closed at arrival because the budget was full and none was silent. */
  refused = 0;
  /** Silent connections closed to make room for a new one. */
  evicted = 0;

  /** `cap`: connections open at once over both doors (0: no limit). */
  constructor(readonly cap: number) {}

  /** Connections open now (both doors). */
  get inUse(): number {
    return this.counted.size;
  }

  /**
   * Counts `socket` until it closes; false (and the socket destroyed) when the budget is full and no
   * silent connection can make room. `begunAt`: the bytes it must send to stop counting as silent.
   */
  admit(socket: net.Socket, begunAt = 1): boolean {
    if (this.cap > 0 && this.counted.size >= this.cap && !this.evictSilent()) {
      this.refused++;
      socket.destroy();
      return false;
    }
    this.counted.add(socket);
    this.maybeSilent.set(socket, begunAt);
    socket.once('close', () => {
      this.maybeSilent.delete(socket);
      this.counted.delete(socket);
    });
    return true;
  }

  /** Closes the oldest silent connection (no longer counted from now); false when there is none. */
  private evictSilent(): boolean {
    for (const [socket, begunAt] of this.maybeSilent) {
      this.maybeSilent.delete(socket);
      if (socket.bytesRead >= begunAt || socket.destroyed) continue;
      this.counted.delete(socket);
      this.evicted++;
      socket.destroy();
      return true;
    }
    return false;
  }

  /**
   * Makes `server` admit each connection it accepts through the budget, before its own listeners
   * see it (a refused socket reaches them destroyed, and they let it go).
   */
  guard(server: net.Server): void {
    server.prependListener('connection', (socket: net.Socket) => {
      this.admit(socket);
    });
  }
}
