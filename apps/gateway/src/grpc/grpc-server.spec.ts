import {
  channelOptionsOf,
  DEFAULT_MAX_CONNECTION_IDLE_MS,
  DEFAULT_MAX_MESSAGE_SIZE,
  DEFAULT_MAX_RECEIVE_SIZE,
  maxReceiveOf,
  type GrpcServerOptions,
} from './grpc-server';

const base: GrpcServerOptions = { host: '127.0.0.1', port: 0 };

describe('gRPC server channel options', () => {
  it('receives messages up to --http-max-input-size unless --grpc-max-message-size is set, and sends up to INT32_MAX (issue 16: it received INT32_MAX, and inflated gzip up to it)', () => {
    expect(maxReceiveOf(base)).toBe(DEFAULT_MAX_RECEIVE_SIZE);
    expect(DEFAULT_MAX_RECEIVE_SIZE).toBe(64 * 1024 * 1024);
    expect(channelOptionsOf({ ...base, maxInputSize: 1000 })).toMatchObject({ 'grpc.max_receive_message_length': 1000, 'grpc.max_send_message_length': DEFAULT_MAX_MESSAGE_SIZE });
    expect(channelOptionsOf({ ...base, maxInputSize: 1000, maxMessageSize: 5000 })).toMatchObject({
      'grpc.max_receive_message_length': 5000,
      'grpc.max_send_message_length': 5000,
    });
  });

  it('closes connections without a call after --grpc-max-connection-idle (5 min unless set; 0: never)', () => {
    expect(channelOptionsOf(base)['grpc.max_connection_idle_ms']).toBe(DEFAULT_MAX_CONNECTION_IDLE_MS);
    expect(channelOptionsOf({ ...base, maxConnectionIdleMs: 60_000 })['grpc.max_connection_idle_ms']).toBe(60_000);
    expect(channelOptionsOf({ ...base, maxConnectionIdleMs: 0 })['grpc.max_connection_idle_ms']).toBeUndefined();
  });
});
