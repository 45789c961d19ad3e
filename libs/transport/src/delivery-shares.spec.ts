import type { Delivery } from './port';
import { deliveryShares } from './delivery-shares';

describe('deliveryShares', () => {
  it('acks the message once every share is acked, each share counted once however often it is acked', async () => {
    let acks = 0;
    const delivery: Delivery = {
      message: { kind: 'cancel', requestId: 'x' }, redelivered: false,
      ack: async () => void acks++, touch: async () => undefined,
    };
    expect(deliveryShares(delivery, 1)).toEqual([delivery]);
    const [a, b, c] = deliveryShares(delivery, 3);
    await a.ack();
    await a.ack();
    await b.ack();
    expect(acks).toBe(0);
    await c.ack();
    await c.ack();
    expect(acks).toBe(1);
  });
});
