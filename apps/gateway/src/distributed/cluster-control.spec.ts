import { InferenceError } from '@nereid/protocol';
import { InMemoryBroker, InMemoryPort, type ControlMessage } from '@nereid/transport';
import { WORKER_LOST_MS } from '@nereid/worker';
import { catchUp, ControlClient, ControlResponder } from './cluster-control';
import { ClusterMembers, startHeartbeat } from './cluster-members';

const tick = (ms = 10): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('ClusterMembers (heartbeats over the in-memory port)', () => {
  it('knows the live workers and gateways, with each worker load, and forgets a member not heard from for WORKER_LOST_MS', async () => {
    const broker = new InMemoryBroker();
    const [listener, sender] = [new InMemoryPort(broker), new InMemoryPort(broker)];
    let now = 1_000_000;
    const members = new ClusterMembers(listener, () => now);
    await members.start();
    const stopWorker = startHeartbeat(sender, () => ({ workerId: 'w1', models: [], devices: { gpus: 0 }, load: 3 }));
    const stopGateway = startHeartbeat(sender, () => ({ workerId: 'g1', role: 'gateway', models: [], devices: { gpus: 0 }, load: 0 }));
    await tick();
    expect(members.live().map((m) => [m.id, m.role, m.load])).toEqual([['g1', 'gateway', 0], ['w1', 'worker', 3]]);
    expect(members.live('worker').map((m) => m.id)).toEqual(['w1']);
    stopWorker();
    stopGateway();
    now += WORKER_LOST_MS + 1;
    expect(members.live()).toEqual([]);
    await members.stop();
    await Promise.all([listener.close(), sender.close()]);
  });
});

describe('ControlClient and ControlResponder', () => {
  let broker: InMemoryBroker;
  let ports: InMemoryPort[];
  let members: ClusterMembers;
  let client: ControlClient;

  beforeEach(async () => {
    broker = new InMemoryBroker();
    ports = [0, 1, 2, 3].map(() => new InMemoryPort(broker));
    members = new ClusterMembers(ports[0]);
    await members.start();
    client = new ControlClient(ports[0], members, 'g1');
    await client.start();
  });

  afterEach(async () => {
    await client.stop();
    await members.stop();
    await Promise.all(ports.map((p) => p.close()));
  });

  const hear = (id: string, role?: 'gateway'): void => members.hear({ kind: 'heartbeat', workerId: id, role, at: 0, models: [], devices: { gpus: 0 }, load: 0 });

  it('gathers the answers of the live members the question is for, errors with their code and words', async () => {
    const asked: Array<[string, ControlMessage['op']]> = [];
    const w1 = new ControlResponder(ports[1], 'w1', 'worker', async (m) => {
      asked.push(['w1', m.op]);
      return { stats: [{ name: m.model, inference_count: 2 }] };
    });
    const w2 = new ControlResponder(ports[2], 'w2', 'worker', async (m) => {
      asked.push(['w2', m.op]);
      throw InferenceError.invalidArg(`failed to load '${m.model}'`);
    });
    const g2 = new ControlResponder(ports[3], 'g2', 'gateway', async (m) => void asked.push(['g2', m.op]));
    for (const r of [w1, w2, g2]) await r.start();
    ['w1', 'w2'].forEach((id) => hear(id));
    hear('g2', 'gateway');
    hear('g1', 'gateway');

    const answers = await client.ask({ op: 'load', model: 'm', to: 'worker' }, 2000);
    expect(answers.missing).toEqual([]);
    const byMember = new Map(answers.replies.map((r) => [r.member, r]));
    expect(byMember.get('w1')?.stats).toEqual([{ name: 'm', inference_count: 2 }]);
    expect(byMember.get('w2')?.error).toEqual({ code: 'INVALID_ARG', message: "failed to load 'm'" });
    // The gateway was not asked, nor did the asking gateway answer itself.
    expect(asked.sort()).toEqual([['w1', 'load'], ['w2', 'load']]);

    const all = await client.ask({ op: 'stats', model: 'm' }, 2000);
    expect(all.replies.map((r) => r.member).sort()).toEqual(['g2', 'w1', 'w2']);
    for (const r of [w1, w2, g2]) await r.stop();
  });

  it('names the live members that did not answer in time and answers without them', async () => {
    const w1 = new ControlResponder(ports[1], 'w1', 'worker', async () => ({ index: [{ name: 'm', version: '1', state: 'READY' }] }));
    await w1.start();
    hear('w1');
    hear('w-silent');
    const started = Date.now();
    const answers = await client.ask({ op: 'index', model: '' }, 150);
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(answers.replies.map((r) => r.member)).toEqual(['w1']);
    expect(answers.missing).toEqual(['w-silent']);
    await w1.stop();
  });

  it('asks no one, and waits for no one, when no member of the role is live', async () => {
    const answers = await client.ask({ op: 'load', model: 'm', to: 'worker' }, 5000);
    expect(answers).toEqual({ replies: [], missing: [] });
  });

  it("catchUp loads the models READY on the live gateways that are not loaded here, and goes on past one that fails", async () => {
    const g2 = new ControlResponder(ports[1], 'g2', 'gateway', async () => ({
      index: [
        { name: 'a', version: '1', state: 'READY', reason: '' },
        { name: 'b', version: '1', state: 'READY', reason: '' },
        { name: 'c', version: '1', state: 'UNAVAILABLE', reason: 'unloaded' },
        { name: 'd', version: '2', state: 'READY', reason: '' },
        { name: 'never' },
      ],
    }));
    await g2.start();
    hear('g2', 'gateway');
    const asked: string[] = [];
    const logged: string[] = [];
    const loaded = await catchUp(
      client,
      {
        loadModel: async (name) => {
          asked.push(name);
          if (name === 'b') throw InferenceError.invalidArg("failed to load 'b', bad config");
        },
        isLoaded: (name) => name === 'd',
      },
      (_level, message) => logged.push(message),
      { heartbeatMs: 0, timeoutMs: 2000 },
    );
    expect(asked).toEqual(['a', 'b']);
    expect(loaded).toEqual(['a']);
    expect(logged).toEqual(["could not load 'b', which the cluster serves: failed to load 'b', bad config", 'loaded what the cluster serves: a']);
    await g2.stop();
  });

  it('runs loads and unloads one after another, in the order they were asked', async () => {
    const order: string[] = [];
    const w1 = new ControlResponder(ports[1], 'w1', 'worker', async (m) => {
      order.push(`start ${m.op} ${m.model}`);
      await tick(m.op === 'load' ? 50 : 1);
      order.push(`end ${m.op} ${m.model}`);
    });
    await w1.start();
    hear('w1');
    await Promise.all([client.ask({ op: 'load', model: 'a' }, 2000), client.ask({ op: 'unload', model: 'a' }, 2000)]);
    expect(order).toEqual(['start load a', 'end load a', 'start unload a', 'end unload a']);
    await w1.stop();
  });
});
