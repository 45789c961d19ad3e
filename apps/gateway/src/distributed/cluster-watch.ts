import { liveEntries, WORKER_BEAT_MS, type ClusterModels } from '@nereid/worker';

/**
 * A gateway's running view of which model versions a live worker serves (the cluster's table,
 * read once per worker heartbeat). A request for a version no live worker serves fails at once
 * rather than waiting in a queue no one reads.
 */
export class ClusterWatch {
  private served = new Set<string>();
  private timer?: NodeJS.Timeout;

  constructor(private readonly cluster: ClusterModels) {}

  async start(): Promise<void> {
    await this.refresh();
    this.timer = setInterval(() => void this.refresh().catch(() => undefined), WORKER_BEAT_MS);
    this.timer.unref();
  }

  /** Reads the table now (the gateway does once its models are loaded). */
  async refresh(): Promise<void> {
    this.served = new Set(liveEntries(await this.cluster.list()).map((e) => `${e.name}/${e.version}`));
  }

  serves(name: string, version: number): boolean {
    return this.served.has(`${name}/${version}`);
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
