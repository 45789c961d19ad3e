import type * as net from 'node:net';

/**
 * One budget of open connections for both front doors (`--http-max-connections`, within three
 * quarters of the open-file limit: http-limits.ts `connectionCap`). Each door admits a connection as
 * it is accepted and the budget counts it until it closes; one beyond the cap is destroyed at once.
 * The HTTP door alone was counted before: 1,100 silent connections to the gRPC port under
 * `ulimit -n 1024` took every descriptor, HTTP refused, and node died of an EMFILE thrown from a
 * timer (issue 16).
 */
export class ConnectionBudget {
  private open = 0;
  /** Connections destroyed at arrival because the budget was full. */
  refused = 0;

  /** `cap`: connections open at once over both doors (0: no limit). */
  constructor(readonly cap: number) {}

  /** Connections open now (both doors). */
  get inUse(): number {
    return this.open;
  }

  /** Counts `socket` until it closes; false (and the socket destroyed) when the budget is full. */
  admit(socket: net.Socket): boolean {
    if (this.cap > 0 && this.open >= this.cap) {
      this.refused++;
      socket.destroy();
      return false;
    }
    this.open++;
    socket.once('close', () => this.open--);
    return true;
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
