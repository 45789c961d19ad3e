import type { Delivery } from './port';

/**
 * `n` shares of one delivery, for a message that carries `n` pieces of work (a gateway's requests
 * of one turn, a scheduler's batches of one tick): the message is acked once every share is, each
 * counted once (a piece may be acked twice, say as failed and as part of a batch that ended). One
 * piece: the delivery itself.
 */
export function deliveryShares(delivery: Delivery, n: number): Delivery[] {
  if (n === 1) return [delivery];
  let left = n;
  const shares: Delivery[] = [];
  for (let i = 0; i < n; i++) {
    let acked = false;
    shares.push({
      message: delivery.message,
      redelivered: delivery.redelivered,
      touch: () => delivery.touch(),
      ack: () => {
        if (acked) return Promise.resolve();
        acked = true;
        return --left === 0 ? delivery.ack() : Promise.resolve();
      },
    });
  }
  return shares;
}
