import { Names, type HeartbeatMessage, type MessagePort, type Subscription, type TransportMessage } from '@nereid/transport';
import { WORKER_BEAT_MS, WORKER_LOST_MS } from '@nereid/worker';

/** A process of the cluster as its last heartbeat described it. */
export interface Member {
  id: string;
  role: 'worker' | 'gateway';
  /** When its last heartbeat arrived (this process's Date.now()). */
  seen: number;
  /** A worker's batches running or waiting on its instances; 0 for a gateway. */
  load: number;
}

/**
 * The cluster's live processes, from the heartbeats every worker and gateway broadcasts each
 * WORKER_BEAT_MS (distributed mode). A member not heard from for WORKER_LOST_MS is gone. Gateways
 * wait for the live members' answers to cluster-wide questions (statistics, load); gateways and
 * schedulers export the live worker count and each worker's load as metrics.
 */
export class ClusterMembers {
  private readonly members = new Map<string, Member>();
  private subscription?: Subscription;

  constructor(
    private readonly port: MessagePort,
    private readonly clock: () => number = Date.now,
  ) {}

  async start(): Promise<void> {
    this.subscription = await this.port.subscribe(Names.heartbeatTopic, (m) => this.hear(m));
  }

  /** Records one heartbeat (exposed for tests over the in-memory port). */
  hear(m: TransportMessage): void {
    if (m.kind !== 'heartbeat') return;
    this.members.set(m.workerId, { id: m.workerId, role: m.role ?? 'worker', seen: this.clock(), load: m.load });
  }

  /** Members heard from within WORKER_LOST_MS; members gone longer than that are forgotten. */
  live(role?: 'worker' | 'gateway'): Member[] {
    const now = this.clock();
    const out: Member[] = [];
    for (const [id, m] of this.members) {
      if (now - m.seen > WORKER_LOST_MS) {
        this.members.delete(id);
        continue;
      }
      if (role === undefined || m.role === role) out.push(m);
    }
    return out.sort((a, b) => a.id.localeCompare(b.id));
  }

  async stop(): Promise<void> {
    await this.subscription?.close();
  }
}

/**
 * Broadcasts this process's heartbeat every WORKER_BEAT_MS (and once at once). `load` is read at
 * each beat. Returns the function that stops it.
 */
export function startHeartbeat(
  port: MessagePort,
  beat: () => Omit<HeartbeatMessage, 'kind' | 'at'>,
  onError: (e: unknown) => void = () => undefined,
): () => void {
  const send = (): void => {
    port.publish(Names.heartbeatTopic, { kind: 'heartbeat', at: Date.now(), ...beat() }).catch(onError);
  };
  send();
  const timer = setInterval(send, WORKER_BEAT_MS);
  timer.unref();
  return () => clearInterval(timer);
}
