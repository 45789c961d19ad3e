import { InferenceError, newInferenceRequest, type InferenceRequest, type InferenceResponse, type ResponseSink } from '@nereid/protocol';
import { LazyAbort } from '../grpc/lazy-abort';
import {
  CancelRegistry, InMemoryBroker, InMemoryPort, MAX_REQUESTS_PER_MESSAGE, Names, ResponseRouter, type ExecuteBatchMessage, type SchedulerChannel, type TransportMessage,
} from '@nereid/transport';
import { ClusterSchedulerChannel } from './remote-channels';

/** What the core's sink of one request saw. */
class RecordingSink implements ResponseSink {
  readonly responses: Array<[InferenceResponse | undefined, boolean]> = [];
  readonly errors: InferenceError[] = [];
  send(response: InferenceResponse | undefined, final: boolean): void {
    this.responses.push([response, final]);
  }
  fail(error: InferenceError): void {
    this.errors.push(error);
  }
}

const noLocal: SchedulerChannel = {
  open: () => undefined,
  enqueue: () => undefined,
  close: async () => undefined,
  pendingCount: () => 0,
};

function request(signal?: AbortSignal): InferenceRequest {
  return {
    id: 'client-1', modelName: 'simple', modelVersion: -1, parameters: {}, sequenceId: 0n, sequenceStart: false, sequenceEnd: false,
    priority: 0, timeoutUs: 0, signal,
    inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 2], data: new Int32Array([1, 2]) } as never],
  };
}

const tick = (): Promise<void> => new Promise((r) => setTimeout(r, 10));

describe('ClusterSchedulerChannel (a gateway, over the in-memory port)', () => {
  let broker: InMemoryBroker;
  let gatewayPort: InMemoryPort;
  let workerPort: InMemoryPort;
  let router: ResponseRouter;
  let channel: ClusterSchedulerChannel;
  const queued: ExecuteBatchMessage[] = [];

  beforeEach(async () => {
    broker = new InMemoryBroker();
    gatewayPort = new InMemoryPort(broker);
    workerPort = new InMemoryPort(broker);
    router = new ResponseRouter(gatewayPort, 'gw-a');
    await router.start();
    channel = new ClusterSchedulerChannel(gatewayPort, router, noLocal);
    channel.open('simple/1/7', { name: 'simple', max_batch_size: 8 }, { instances: 1, depth: 1 });
    queued.length = 0;
    await workerPort.consume('requests:simple/1', (d) => {
      queued.push(d.message as ExecuteBatchMessage);
      void d.ack();
    });
  });

  afterEach(async () => {
    await gatewayPort.close();
    await workerPort.close();
  });

  it("puts a request on its version's request queue and hands the answer from its mailbox to the request's sink", async () => {
    const sink = new RecordingSink();
    channel.enqueue('simple/1/7', { request: request(), sink });
    await tick();
    expect(queued).toHaveLength(1);
    const wire = queued[0].requests[0];
    expect(queued[0].key).toBe('simple/1');
    expect([wire.replyTo, wire.clientId, wire.modelName]).toEqual(['gw-a', 'client-1', 'simple']);
    expect(channel.pendingCount('simple/1/7')).toBe(1);
    const answer: TransportMessage = {
      kind: 'response', requestId: wire.requestId, final: true,
      response: { id: 'client-1', modelName: 'simple', modelVersion: '1', outputs: [] },
    };
    await workerPort.send(Names.gatewayMailbox('gw-a'), answer);
    await tick();
    expect(sink.responses).toEqual([[{ id: 'client-1', modelName: 'simple', modelVersion: '1', outputs: [], parameters: undefined }, true]]);
    expect(channel.pendingCount('simple/1/7')).toBe(0);
  });

  it("turns a worker's error into the sink's error, with its code and words", async () => {
    const sink = new RecordingSink();
    channel.enqueue('simple/1/7', { request: request(), sink });
    await tick();
    await workerPort.send(Names.gatewayMailbox('gw-a'), {
      kind: 'response', requestId: queued[0].requests[0].requestId, final: true, error: { code: 'INTERNAL', message: 'boom' },
    });
    await tick();
    expect(sink.errors.map((e) => [e.code, e.message])).toEqual([['INTERNAL', 'boom']]);
  });

  it('a client that goes away fails its request CANCELLED and aborts the work on it wherever it runs', async () => {
    const cancels = new CancelRegistry(workerPort);
    await cancels.start();
    const client = new AbortController();
    const sink = new RecordingSink();
    channel.enqueue('simple/1/7', { request: request(client.signal), sink });
    await tick();
    const running = cancels.track(queued[0].requests[0].requestId);
    client.abort();
    await tick();
    expect(sink.errors.map((e) => e.code)).toEqual(['CANCELLED']);
    expect(running.aborted).toBe(true);
    expect(channel.pendingCount('simple/1/7')).toBe(0);
    // A late answer for it is dropped by the router.
    await workerPort.send(Names.gatewayMailbox('gw-a'), { kind: 'response', requestId: queued[0].requests[0].requestId, final: true });
    await tick();
    expect(sink.responses).toEqual([]);
    expect(router.dropped).toBe(1);
    await cancels.stop();
  });

  it("cancels a front door's request through its lazy abort, never building the request's AbortSignal", async () => {
    const cancels = new CancelRegistry(workerPort);
    await cancels.start();
    const lazy = new LazyAbort();
    const req = newInferenceRequest('simple', -1);
    req.inputs = request().inputs;
    lazy.attach(req);
    const sink = new RecordingSink();
    channel.enqueue('simple/1/7', { request: req, sink });
    await tick();
    const running = cancels.track(queued[0].requests[0].requestId);
    expect((lazy as unknown as { controller?: AbortController }).controller).toBeUndefined();
    lazy.abort();
    await tick();
    expect(sink.errors.map((e) => e.code)).toEqual(['CANCELLED']);
    expect(running.aborted).toBe(true);
    expect(channel.pendingCount('simple/1/7')).toBe(0);
    expect((lazy as unknown as { controller?: AbortController }).controller).toBeUndefined();
    await cancels.stop();
  });

  it('an answered request stops listening for its client: a later abort sends no cancel', async () => {
    const lazy = new LazyAbort();
    const req = newInferenceRequest('simple', -1);
    req.inputs = request().inputs;
    lazy.attach(req);
    const sink = new RecordingSink();
    const published: TransportMessage[] = [];
    await workerPort.subscribe(Names.cancelTopic, (m) => published.push(m));
    channel.enqueue('simple/1/7', { request: req, sink });
    await tick();
    await workerPort.send(Names.gatewayMailbox('gw-a'), { kind: 'response', requestId: queued[0].requests[0].requestId, final: true });
    await tick();
    lazy.abort();
    await tick();
    expect(sink.responses).toEqual([[undefined, true]]);
    expect(sink.errors).toEqual([]);
    expect(published).toEqual([]);
    expect(channel.pendingCount('simple/1/7')).toBe(0);
  });

  it("sends a turn's requests for a version as one message, in order, and answers each from its own response", async () => {
    const sinks = [new RecordingSink(), new RecordingSink(), new RecordingSink()];
    for (const sink of sinks) channel.enqueue('simple/1/7', { request: request(), sink });
    await tick();
    expect(queued).toHaveLength(1);
    const ids = queued[0].requests.map((r) => r.requestId);
    expect(ids).toEqual(['gw-a:1', 'gw-a:2', 'gw-a:3']);
    expect(channel.pendingCount('simple/1/7')).toBe(3);
    // Answered out of order, each to its own sink.
    for (const i of [2, 0, 1]) {
      await workerPort.send(Names.gatewayMailbox('gw-a'), { kind: 'response', requestId: ids[i], final: true, error: { code: 'INTERNAL', message: `r${i}` } });
    }
    await tick();
    expect(sinks.map((s) => s.errors.map((e) => e.message))).toEqual([['r0'], ['r1'], ['r2']]);
    expect(channel.pendingCount('simple/1/7')).toBe(0);
  });

  it('sends a request with over 64 KiB of tensors alone, and starts a new message where the next would pass 64 KiB', async () => {
    const sized = (elements: number): InferenceRequest => ({
      ...request(), inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, elements], data: new Int32Array(elements) } as never],
    });
    const sink = new RecordingSink();
    for (const elements of [2, 20_000, 2, 10_000, 2]) channel.enqueue('simple/1/7', { request: sized(elements), sink });
    await tick();
    // 80 000 bytes: alone, at once; the others (40 024 bytes) together at the turn's end.
    expect(queued.map((m) => m.requests.map((r) => r.inputs[0].shape[1]))).toEqual([[20_000], [2, 2, 10_000, 2]]);
    // Two of 40 000 bytes would pass 64 KiB together.
    channel.enqueue('simple/1/7', { request: sized(10_000), sink });
    channel.enqueue('simple/1/7', { request: sized(10_000), sink });
    await tick();
    expect(queued.slice(2).map((m) => m.requests.map((r) => r.inputs[0].shape[1]))).toEqual([[10_000], [10_000]]);
  });

  it(`puts at most ${MAX_REQUESTS_PER_MESSAGE} requests in one message (a scheduler reads ahead a number of messages)`, async () => {
    const sink = new RecordingSink();
    const n = MAX_REQUESTS_PER_MESSAGE * 2 + 3;
    for (let i = 0; i < n; i++) channel.enqueue('simple/1/7', { request: request(), sink });
    await tick();
    expect(queued.map((m) => m.requests.length)).toEqual([MAX_REQUESTS_PER_MESSAGE, MAX_REQUESTS_PER_MESSAGE, 3]);
    expect(queued.flatMap((m) => m.requests.map((r) => r.requestId))).toEqual(Array.from({ length: n }, (_, i) => `gw-a:${i + 1}`));
  });

  it('sends each request of a model with sequence batching alone (a redelivered message must not run a done one again)', async () => {
    channel.open('seq/1/3', { name: 'seq', max_batch_size: 8, sequence_batching: {} }, { instances: 1, depth: 1 });
    await workerPort.consume('requests:seq/1', (d) => {
      queued.push(d.message as ExecuteBatchMessage);
      void d.ack();
    });
    const sink = new RecordingSink();
    for (let i = 0; i < 3; i++) channel.enqueue('seq/1/3', { request: { ...request(), modelName: 'seq' }, sink });
    await tick();
    expect(queued.map((m) => m.requests.length)).toEqual([1, 1, 1]);
  });

  it("leaves out of the turn's message a request whose client went away before it left", async () => {
    const client = new AbortController();
    const kept = new RecordingSink();
    const gone = new RecordingSink();
    channel.enqueue('simple/1/7', { request: request(client.signal), sink: gone });
    channel.enqueue('simple/1/7', { request: request(), sink: kept });
    client.abort();
    await tick();
    expect(gone.errors.map((e) => e.code)).toEqual(['CANCELLED']);
    expect(queued.map((m) => m.requests.map((r) => r.requestId))).toEqual([['gw-a:2']]);
    expect(channel.pendingCount('simple/1/7')).toBe(1);
  });

  it("fails every request of a message the port could not take with the port's error", async () => {
    const refusing = { ...gatewayPort, enqueue: () => Promise.reject(InferenceError.unavailable('Redis is gone')) } as unknown as InMemoryPort;
    const failing = new ClusterSchedulerChannel(refusing, router, noLocal);
    failing.open('simple/1/7', { name: 'simple', max_batch_size: 8 }, { instances: 1, depth: 1 });
    const sinks = [new RecordingSink(), new RecordingSink()];
    for (const sink of sinks) failing.enqueue('simple/1/7', { request: request(), sink });
    await tick();
    expect(sinks.map((s) => s.errors.map((e) => [e.code, e.message]))).toEqual([[['UNAVAILABLE', 'Redis is gone']], [['UNAVAILABLE', 'Redis is gone']]]);
    expect(failing.pendingCount('simple/1/7')).toBe(0);
  });
});
