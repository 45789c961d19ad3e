import {
  Names, type ControlMessage, type ControlReplyMessage, type MessagePort, type Subscription, type TransportMessage,
} from '@nereid/transport';
import { toInferenceError } from '@nereid/protocol';
import type { ClusterMembers } from './cluster-members';

/** A control question, without what the asking side fills in. */
export type ControlQuestion = Omit<ControlMessage, 'kind' | 'id' | 'replyTo' | 'from'>;

/** What came back to one question: the answers, and the live members that did not answer in time. */
export interface ControlAnswers {
  replies: ControlReplyMessage[];
  /** Ids of the members that were asked (live when it was asked) and did not answer within the timeout. */
  missing: string[];
}

const controlMailbox = (id: string): string => `control:${id}`;

/**
 * The asking side of the cluster's control plane (a gateway): broadcasts a question on the control
 * topic and gathers the answers of the live members it is for (workers, gateways or both, from
 * their heartbeats) until each has answered or the timeout passes. A member that does not answer
 * in time is left out of the answers and named in `missing`.
 */
export class ControlClient {
  private counter = 0;
  private subscription?: Subscription;
  private readonly waiting = new Map<string, (reply: ControlReplyMessage) => void>();

  constructor(
    private readonly port: MessagePort,
    private readonly members: ClusterMembers,
    /** This process's member id (it does not ask itself). */
    readonly selfId: string,
  ) {}

  async start(): Promise<void> {
    this.subscription = await this.port.receive(controlMailbox(this.selfId), (m) => {
      if (m.kind === 'control-reply') this.waiting.get(m.id)?.(m);
    });
  }

  async ask(question: ControlQuestion, timeoutMs: number): Promise<ControlAnswers> {
    const expected = new Set(this.members.live(question.to).map((m) => m.id));
    expected.delete(this.selfId);
    if (expected.size === 0) return { replies: [], missing: [] };
    const id = `${this.selfId}:c${++this.counter}`;
    const replies: ControlReplyMessage[] = [];
    const done = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      this.waiting.set(id, (reply) => {
        replies.push(reply);
        expected.delete(reply.member);
        if (expected.size === 0) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    try {
      await this.port.publish(Names.controlTopic, { kind: 'control', id, replyTo: controlMailbox(this.selfId), from: this.selfId, ...question });
      await done;
    } finally {
      this.waiting.delete(id);
    }
    return { replies, missing: [...expected] };
  }

  async stop(): Promise<void> {
    await this.subscription?.close();
  }
}

/** What a member does with a question it is asked: the answer's payload, or a thrown InferenceError. */
export type ControlHandler = (question: ControlMessage) => Promise<Pick<ControlReplyMessage, 'stats' | 'index'> | void>;

/**
 * The answering side (every worker and gateway): hears the control topic, runs each question meant
 * for its role through `handler` and answers to the asker's mailbox, with the error the handler
 * threw (code and words) when it failed. Loads and unloads run one after another, in the order
 * they were asked; statistics and index questions are answered at once.
 */
export class ControlResponder {
  private subscription?: Subscription;
  private changes: Promise<void> = Promise.resolve();

  constructor(
    private readonly port: MessagePort,
    readonly selfId: string,
    readonly role: 'worker' | 'gateway',
    private readonly handler: ControlHandler,
  ) {}

  async start(): Promise<void> {
    this.subscription = await this.port.subscribe(Names.controlTopic, (m) => this.hear(m));
  }

  private hear(m: TransportMessage): void {
    if (m.kind !== 'control' || m.from === this.selfId || (m.to !== undefined && m.to !== this.role)) return;
    const answer = async (): Promise<void> => {
      let reply: ControlReplyMessage;
      try {
        reply = { kind: 'control-reply', id: m.id, member: this.selfId, role: this.role, ...((await this.handler(m)) ?? {}) };
      } catch (e) {
        const error = toInferenceError(e);
        reply = { kind: 'control-reply', id: m.id, member: this.selfId, role: this.role, error: { code: error.code, message: error.message } };
      }
      await this.port.send(m.replyTo, reply).catch(() => undefined);
    };
    if (m.op === 'load' || m.op === 'unload') this.changes = this.changes.then(answer);
    else void answer();
  }

  async stop(): Promise<void> {
    await this.subscription?.close();
    await this.changes;
  }
}

/**
 * Explicit mode: a process that joins the cluster (a worker or gateway started later, or again)
 * loads what the gateways already serve: the models loaded through the repository API before it
 * started. It first waits one heartbeat to hear who is live. A load's config or file overrides are
 * not replayed: the model loads from the repository. Returns the models it loaded.
 */
export async function catchUp(
  client: ControlClient,
  local: { loadModel(name: string): Promise<void>; isLoaded(name: string): boolean },
  log: (level: 'info' | 'warn', message: string) => void,
  options: { heartbeatMs: number; timeoutMs: number },
): Promise<string[]> {
  await new Promise((r) => setTimeout(r, options.heartbeatMs + 250));
  const answers = await client.ask({ op: 'index', model: '', to: 'gateway' }, options.timeoutMs);
  const names = new Set(answers.replies.flatMap((r) => (r.index ?? []).filter((e) => e.state === 'READY').map((e) => e.name)));
  const loaded: string[] = [];
  for (const name of [...names].sort()) {
    if (local.isLoaded(name)) continue;
    try {
      await local.loadModel(name);
      loaded.push(name);
    } catch (e) {
      log('warn', `could not load '${name}', which the cluster serves: ${(e as Error).message}`);
    }
  }
  if (loaded.length > 0) log('info', `loaded what the cluster serves: ${loaded.join(', ')}`);
  return loaded;
}
