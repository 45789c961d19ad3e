/** A message port that tells a test what its consumers ack and what it sends, before doing it. */
import type { ConsumeOptions, Delivery, MessagePort, TransportMessage } from '@nereid/transport';

export interface PortHooks {
  /** A consumer acked the delivery of `m`. */
  acked?: (m: TransportMessage) => void;
  /** `m` is being sent to the mailbox `to`. */
  sent?: (to: string, m: TransportMessage) => void;
}

/** `port`, with its consumers' acks and its sends told to `hooks` first; everything else as it is. */
export function recordingPort<P extends MessagePort>(port: P, hooks: PortHooks): P {
  return new Proxy(port, {
    get(target, prop, receiver) {
      if (prop === 'consume' && hooks.acked) {
        const acked = hooks.acked;
        return (queue: string, handler: (d: Delivery) => void, options?: ConsumeOptions) =>
          target.consume(queue, (d) => handler({
            message: d.message, redelivered: d.redelivered, touch: () => d.touch(),
            ack: () => {
              acked(d.message);
              return d.ack();
            },
          }), options);
      }
      if (prop === 'send' && hooks.sent) {
        const sent = hooks.sent;
        return (to: string, m: TransportMessage) => {
          sent(to, m);
          return target.send(to, m);
        };
      }
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}
