export * from './channels';
export * from './in-memory';
export * from './messages';
export * from './control-files';
export * from './codec';
export * from './port';
export * from './delivery-shares';
export * from './tick-groups';
export * from './in-memory-port';
export * from './response-router';
export * from './transport-errors';
export type { RedisPortOptions } from './redis-port';
import type { MessagePort } from './port';
import type { RedisPortOptions } from './redis-port';

/**
 * Connects a Redis message port. ioredis is loaded only here, so that an embedded server, which
 * never calls this, does not load it.
 */
export async function connectRedisPort(options: RedisPortOptions): Promise<MessagePort> {
  const { RedisPort } = await import('./redis-port');
  return RedisPort.connect(options);
}
