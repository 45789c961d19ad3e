import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { InferenceError } from '@nereid/protocol';
import { BodyBudget, SMALL_MESSAGE_BYTES } from './body-budget';

/**
 * A loopback server whose every request goes through `budget`; `hold(name)` keeps a request's
 * answer back until `release(name)` (the request's path names it), so that its charge stays.
 */
async function serverWith(budget: BodyBudget) {
  const events: string[] = [];
  const held = new Map<string, () => void>();
  const waiting = new Map<string, () => void>();
  const server = http.createServer((req, res) => {
    const name = (req.url ?? '/').slice(1);
    budget.admit(req, res, (_req, _res, error?: InferenceError) => {
      if (error) {
        events.push(`${name} refused`);
        res.writeHead(503).end(error.message);
        return;
      }
      events.push(`${name} admitted (${budget.inUse} in use)`);
      req.resume();
      req.on('end', () => {
        const answer = () => res.end('ok');
        if (name.startsWith('hold')) held.set(name, answer);
        else answer();
        waiting.get(name)?.();
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const send = (name: string, bytes: number, headers: Record<string, string> = {}) =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, path: `/${name}`, method: 'POST', agent: false, headers }, (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.on('error', reject);
      req.end(Buffer.alloc(bytes));
    });
  const arrived = (name: string) => new Promise<void>((r) => waiting.set(name, r));
  const release = (name: string) => held.get(name)!();
  return { events, send, arrived, release, close: () => new Promise<void>((r) => server.close(() => r())) };
}

const settle = () => new Promise((r) => setTimeout(r, 100));

describe('BodyBudget', () => {
  it('lets a declared body wait in line until an earlier one is released, first come first served', async () => {
    const budget = new BodyBudget(1000, 5000);
    const s = await serverWith(budget);
    const first = s.arrived('hold-a');
    const a = s.send('hold-a', 600);
    await first;
    const b = s.send('b', 600);
    const c = s.send('c', 100);
    await settle();
    // c fits, but b came first and waits for room: c waits behind it.
    expect(s.events).toEqual(['hold-a admitted (600 in use)']);
    s.release('hold-a');
    await Promise.all([a, b, c]);
    expect(s.events).toEqual(['hold-a admitted (600 in use)', 'b admitted (600 in use)', 'c admitted (700 in use)']);
    await settle();
    expect(budget.inUse).toBe(0);
    await s.close();
  });

  it('answers a body that waited past its time with a 503 in clear words, and takes nothing for it', async () => {
    const budget = new BodyBudget(1000, 200);
    const s = await serverWith(budget);
    const first = s.arrived('hold-a');
    const a = s.send('hold-a', 900);
    await first;
    const b = await s.send('b', 500);
    expect(b).toEqual({ status: 503, text: 'the server holds its limit of 1000 bytes of request bodies (--http-max-inflight-body-bytes); try again later' });
    expect(budget.inUse).toBe(900);
    s.release('hold-a');
    await a;
    await settle();
    expect(budget.inUse).toBe(0);
    await s.close();
  });

  it('takes a body larger than the whole budget only while nothing else is held', async () => {
    const budget = new BodyBudget(1000, 5000);
    const s = await serverWith(budget);
    expect((await s.send('big', 5000)).status).toBe(200);
    expect(s.events).toEqual(['big admitted (5000 in use)']);
    await settle();
    expect(budget.inUse).toBe(0);
    await s.close();
  });

  it('charges growing bytes while they fit and refuses at once past the budget; the charge goes with the response', async () => {
    const budget = new BodyBudget(1000, 5000);
    let refusal: InferenceError | undefined;
    const server = http.createServer((req, res) => {
      budget.admit(req, res, () => {
        expect(budget.grow(res, 600)).toBeUndefined();
        refusal = budget.grow(res, 600);
        req.resume();
        req.on('end', () => res.end());
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    // Two writes and no Content-Length: Node sends the body chunked.
    await new Promise<void>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, method: 'POST', agent: false }, (res) => res.resume().on('end', resolve));
      req.on('error', reject);
      req.write('x');
      req.end('y');
    });
    expect(refusal?.code).toBe('UNAVAILABLE');
    await settle();
    expect(budget.inUse).toBe(0);
    await new Promise<void>((r) => server.close(() => r()));
  });

  it('charges bytes held outside HTTP (gRPC messages) only when they fit, and lets waiting bodies go on when they are released', async () => {
    const budget = new BodyBudget(1000, 5000);
    const alone = budget.chargeHeld(5000); // alone: larger than the budget is taken
    expect(alone).toBeDefined();
    expect(budget.chargeHeld(2000)).toBeUndefined();
    alone!();
    alone!(); // given back once
    expect(budget.inUse).toBe(0);
    const held = budget.chargeHeld(700)!;
    expect(budget.chargeHeld(400)).toBeUndefined();
    expect(budget.inUse).toBe(700);
    // An HTTP body that does not fit waits for the gRPC bytes to go.
    const s = await serverWith(budget);
    const b = s.send('b', 600);
    await settle();
    expect(s.events).toEqual([]);
    held();
    expect((await b).status).toBe(200);
    expect(s.events).toEqual(['b admitted (600 in use)']);
    await settle();
    expect(budget.inUse).toBe(0);
    expect(budget.exhaustedMessage).toBe('the server holds its limit of 1000 bytes of request bodies (--http-max-inflight-body-bytes); try again later');
    await s.close();
  });

  it('takes small held messages into a reserve of an eighth of the budget while large ones hold it', () => {
    const budget = new BodyBudget(8 * 1024 * 1024, 5000);
    const large = budget.chargeHeld(8 * 1024 * 1024)!;
    expect(budget.chargeHeld(SMALL_MESSAGE_BYTES + 1)).toBeUndefined();
    const small = Array.from({ length: 16 }, () => budget.chargeHeld(SMALL_MESSAGE_BYTES));
    expect(small.every((r) => r !== undefined)).toBe(true);
    // The reserve (1 MiB) is full: the next small one is refused.
    expect(budget.chargeHeld(100)).toBeUndefined();
    small[0]!();
    expect(budget.chargeHeld(100)).toBeDefined();
    large();
    expect(budget.inUse).toBe(15 * SMALL_MESSAGE_BYTES + 100);
  });

  it('grows a held charge as its bytes arrive (a compressed gRPC message inflating): refused once it does not fit, unless it is all the budget holds', () => {
    const K = 100 * 1024; // chunks over a small message, so that the reserve does not take them
    const budget = new BodyBudget(10 * K, 5000);
    const other = budget.holdCharge();
    expect(other.grow(K)).toBe(true);
    const inflating = budget.holdCharge();
    for (let i = 0; i < 9; i++) expect(inflating.grow(K)).toBe(true);
    // 10 K held: the next chunk does not fit while another charge holds bytes.
    expect(inflating.grow(K)).toBe(false);
    expect(budget.inUse).toBe(10 * K);
    other.release();
    // Alone, it may go past the budget (as one message or body alone may).
    expect(inflating.grow(50 * K)).toBe(true);
    expect(budget.holdCharge().grow(K)).toBe(false);
    inflating.release();
    inflating.release();
    expect(inflating.grow(1)).toBe(false); // released: nothing more is charged to it
    expect(budget.inUse).toBe(0);
  });

  it('lets a held charge use the reserve only while all its bytes stay within a small message', () => {
    const budget = new BodyBudget(8 * 1024 * 1024, 5000);
    const large = budget.chargeHeld(8 * 1024 * 1024)!;
    const small = budget.holdCharge();
    expect(small.grow(1000)).toBe(true);
    expect(small.grow(SMALL_MESSAGE_BYTES - 1000)).toBe(true);
    // A small compressed message that inflates past 64 KiB while the budget is full is refused.
    expect(small.grow(1)).toBe(false);
    expect(budget.inUse).toBe(8 * 1024 * 1024 + SMALL_MESSAGE_BYTES);
    small.release();
    large();
    expect(budget.inUse).toBe(0);
  });
});
