import type { Subscription } from './port';
import { TransportErrors } from './transport-errors';

/**
 * What every MessagePort keeps of its own state: whether it is closed, and the subscriptions it
 * opened, so that closing the port closes them all.
 */
export class PortSubscriptions {
  private readonly open = new Set<Subscription>();
  private closedFlag = false;

  get closed(): boolean {
    return this.closedFlag;
  }

  /** Throws the port-closed error once `closeAll` has run. */
  check(): void {
    if (this.closedFlag) throw TransportErrors.portClosed();
  }

  /** `s`, kept until it or the port is closed. */
  track(s: Subscription): Subscription {
    this.open.add(s);
    return {
      close: async () => {
        this.open.delete(s);
        await s.close();
      },
    };
  }

  async closeAll(): Promise<void> {
    this.closedFlag = true;
    await Promise.all([...this.open].map((s) => s.close()));
    this.open.clear();
  }
}
