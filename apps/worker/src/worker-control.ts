import type { ModelConfig } from '@nereid/model-config';
import { controlFilesFromWire, type ControlMessage, type ControlReplyMessage, type LifecycleMessage, type LifecycleMessageState, type WorkerCapacity } from '@nereid/transport';
import type { AgentModel, WorkerAgent } from './worker-agent';

/** What a worker's control plane needs of its own server: the embedded core's repository and statistics API. */
export interface WorkerCore {
  loadModel(name: string, options?: { config?: string; files?: Map<string, Uint8Array> }): Promise<void>;
  unloadModel(name: string, unloadDependents: boolean): Promise<void>;
  statistics(name: string, version: number): unknown[];
  repositoryIndex(readyOnly: boolean): Promise<Array<{ name: string; version?: string; state?: string; reason?: string }>>;
}

/** A model version of the worker's server, as its lifecycle event and manager describe it. */
export interface WorkerVersion {
  model: string;
  version: number;
  state: LifecycleMessageState | 'UNKNOWN';
  reason: string;
  /** The runtime's key (`<name>/<version>/<generation>`). */
  key?: string;
}

/**
 * The worker's side of the cluster's control plane (distributed mode): what it serves follows its
 * own server's model lifecycle, and it answers the gateways' questions through its own core.
 *
 * - A version that becomes READY here (not an ensemble: ensembles run in the gateways) is served
 *   to the cluster; one that starts UNLOADING or becomes UNAVAILABLE is withdrawn. Each transition
 *   is broadcast as a lifecycle message.
 * - `load`: the core loads the model (the repository API's rules and words), and the answer waits
 *   until the versions it made READY are in the cluster's table. `unload`: the model's versions
 *   are withdrawn first (no new batches; the running ones finish), then the core unloads it.
 * - `stats`: this process's own statistics (its executions: batch_stats, execution counts, and
 *   what models' BLS calls did here); `index`: its own repository index.
 */
export class WorkerControl {
  constructor(
    private readonly agent: WorkerAgent,
    private readonly core: WorkerCore,
    /** The runtime of a READY version: its config and what its load offered. */
    private readonly runtimeOf: (name: string, version: number) => { key: string; config: ModelConfig; capacity: WorkerCapacity } | undefined,
    private readonly announce: (message: LifecycleMessage) => void,
  ) {}

  /** Follows one lifecycle transition of the worker's server. */
  onLifecycle(event: WorkerVersion): void {
    if (event.state !== 'UNKNOWN') {
      this.announce({ kind: 'lifecycle', model: event.model, version: event.version, state: event.state, reason: event.reason, key: event.key });
    }
    if (event.state === 'READY') {
      const rt = this.runtimeOf(event.model, event.version);
      if (!rt || rt.key !== event.key || rt.config.platform === 'ensemble') return;
      const model: AgentModel = {
        name: event.model, version: event.version, localKey: rt.key, config: rt.config, instances: rt.capacity.instances, depth: rt.capacity.depth,
      };
      void this.agent.serve(model).catch(() => undefined);
    } else if (event.state === 'UNLOADING' || event.state === 'UNAVAILABLE') {
      void this.agent.withdraw(event.model, event.version, event.key).catch(() => undefined);
    }
  }

  /** Answers one control question (throws the core's InferenceError when it fails). */
  async handle(m: ControlMessage): Promise<Pick<ControlReplyMessage, 'stats' | 'index'> | void> {
    switch (m.op) {
      case 'load': {
        const files = controlFilesFromWire(m.files);
        await this.core.loadModel(m.model, m.config === undefined && files === undefined ? undefined : { config: m.config, files });
        await this.agent.settled();
        return;
      }
      case 'unload':
        for (const id of this.agent.models.map((s) => s.key)) {
          const at = id.lastIndexOf('/');
          if (id.slice(0, at) === m.model) await this.agent.withdraw(m.model, Number(id.slice(at + 1)));
        }
        await this.core.unloadModel(m.model, m.unloadDependents === true);
        await this.agent.settled();
        return;
      case 'stats':
        try {
          return { stats: this.core.statistics(m.model, m.version ?? -1) as Array<Record<string, unknown>> };
        } catch {
          // This worker does not serve the model: it adds nothing.
          return { stats: [] };
        }
      case 'index':
        return { index: await this.core.repositoryIndex(false) };
    }
  }
}
