import { BackendRegistry } from '@nereid/backends';
import type { ModelConfig } from '@nereid/model-config';
import { CancelRegistry, InMemoryBroker, InMemoryPort, Names, type LifecycleMessage, type TransportMessage } from '@nereid/transport';
import type { ClusterModelEntry, ClusterModels } from './cluster-models';
import { WorkerAgent } from './worker-agent';
import { WorkerControl, type WorkerCore } from './worker-control';
import { WorkerHost } from './worker-host';

/** The cluster's model table in a Map (what RedisClusterModels keeps in a Redis hash). */
class MapClusterModels implements ClusterModels {
  readonly entries = new Map<string, ClusterModelEntry>();
  async publish(e: ClusterModelEntry): Promise<void> {
    this.entries.set(`${e.name}/${e.version}@${e.workerId}`, e);
  }
  async withdraw(name: string, version: number, workerId: string): Promise<void> {
    this.entries.delete(`${name}/${version}@${workerId}`);
  }
  async list(): Promise<ClusterModelEntry[]> {
    return [...this.entries.values()];
  }
}

const simple: ModelConfig = { name: 'simple', backend: 'onnxruntime', max_batch_size: 8 };
const ensemble: ModelConfig = { name: 'ens', platform: 'ensemble', max_batch_size: 0 };

describe("WorkerControl: what a worker serves follows its server's model lifecycle", () => {
  let broker: InMemoryBroker;
  let port: InMemoryPort;
  let observer: InMemoryPort;
  let cluster: MapClusterModels;
  let agent: WorkerAgent;
  let control: WorkerControl;
  let runtimes: Map<string, { key: string; config: ModelConfig }>;
  const heard: LifecycleMessage[] = [];

  beforeEach(async () => {
    broker = new InMemoryBroker();
    port = new InMemoryPort(broker);
    observer = new InMemoryPort(broker);
    heard.length = 0;
    await observer.subscribe(Names.lifecycleTopic, (m: TransportMessage) => void (m.kind === 'lifecycle' && heard.push(m)));
    cluster = new MapClusterModels();
    const host = new WorkerHost(new BackendRegistry(), { infer: async () => [], onBatch: () => undefined }, () => undefined);
    agent = new WorkerAgent(port, cluster, host, new CancelRegistry(port), 'worker-1');
    runtimes = new Map();
    // Questions are not asked in these tests: the core is never called.
    const core: WorkerCore = {
      loadModel: () => Promise.reject(new Error('not asked')),
      unloadModel: () => Promise.reject(new Error('not asked')),
      statistics: () => [],
      repositoryIndex: async () => [],
    };
    control = new WorkerControl(
      agent,
      core,
      (name, version) => {
        const rt = runtimes.get(`${name}/${version}`);
        return rt && { ...rt, capacity: { instances: 2, depth: 1 } };
      },
      (m) => void port.publish(Names.lifecycleTopic, m),
    );
  });

  afterEach(async () => {
    await agent.stop();
    await port.close();
    await observer.close();
  });

  it('publishes a version that becomes READY, withdraws it when its runtime unloads, and broadcasts each transition', async () => {
    control.onLifecycle({ model: 'simple', version: 1, state: 'LOADING', reason: '', key: 'simple/1/1' });
    runtimes.set('simple/1', { key: 'simple/1/1', config: simple });
    control.onLifecycle({ model: 'simple', version: 1, state: 'READY', reason: '', key: 'simple/1/1' });
    await agent.settled();
    expect([...cluster.entries.values()].map((e) => [e.name, e.version, e.workerId, e.instances])).toEqual([['simple', 1, 'worker-1', 2]]);
    expect(agent.models).toEqual([{ key: 'simple/1', instances: 2 }]);

    control.onLifecycle({ model: 'simple', version: 1, state: 'UNLOADING', reason: '', key: 'simple/1/1' });
    control.onLifecycle({ model: 'simple', version: 1, state: 'UNAVAILABLE', reason: 'unloaded', key: 'simple/1/1' });
    await agent.settled();
    expect(cluster.entries.size).toBe(0);
    expect(agent.models).toEqual([]);
    await new Promise((r) => setTimeout(r, 10));
    expect(heard.map((m) => [m.model, m.version, m.state, m.reason, m.key])).toEqual([
      ['simple', 1, 'LOADING', '', 'simple/1/1'],
      ['simple', 1, 'READY', '', 'simple/1/1'],
      ['simple', 1, 'UNLOADING', '', 'simple/1/1'],
      ['simple', 1, 'UNAVAILABLE', 'unloaded', 'simple/1/1'],
    ]);
  });

  it("a reload's new runtime takes over the version, and the old runtime's unloading does not withdraw it", async () => {
    runtimes.set('simple/1', { key: 'simple/1/1', config: simple });
    control.onLifecycle({ model: 'simple', version: 1, state: 'READY', reason: '', key: 'simple/1/1' });
    runtimes.set('simple/1', { key: 'simple/1/2', config: { ...simple, max_batch_size: 4 } });
    control.onLifecycle({ model: 'simple', version: 1, state: 'READY', reason: '', key: 'simple/1/2' });
    control.onLifecycle({ model: 'simple', version: 1, state: 'UNLOADING', reason: '', key: 'simple/1/1' });
    await agent.settled();
    const [entry] = [...cluster.entries.values()];
    expect(entry.config.max_batch_size).toBe(4);
    expect(cluster.entries.size).toBe(1);
  });

  it('does not publish an ensemble (its steps run on the composing models)', async () => {
    runtimes.set('ens/1', { key: 'ens/1/1', config: ensemble });
    control.onLifecycle({ model: 'ens', version: 1, state: 'READY', reason: '', key: 'ens/1/1' });
    await agent.settled();
    expect(cluster.entries.size).toBe(0);
  });
});
