import { DEFAULT_HTTP_LIMITS } from '@nereid/gateway';
import { defaultServeOptions } from './cli-options';
import { parseServeArgs, usage } from './cli-parser';

const REPO = '--model-repository=/models';

/** The help line of `flag` in the usage text. */
function helpOf(flag: string): string {
  return usage()
    .split('\n')
    .find((line) => line.trimStart().startsWith(`${flag} `) || line.trimStart().startsWith(`${flag}=`) || line.trimStart() === flag)!;
}

describe('resource bound flags', () => {
  it('state the defaults the server uses', () => {
    // It said 67108864; the budget is 32 MiB (http-limits.ts).
    expect(helpOf('--http-max-inflight-body-bytes')).toContain(`(default ${DEFAULT_HTTP_LIMITS.maxInflightBodyBytes})`);
    expect(defaultServeOptions().httpMaxInflightBodyBytes).toBe(DEFAULT_HTTP_LIMITS.maxInflightBodyBytes);
    expect(helpOf('--http-max-connections')).toContain(`(default ${DEFAULT_HTTP_LIMITS.maxConnections}`);
    expect(helpOf('--http-request-timeout-secs')).toContain(`(default ${DEFAULT_HTTP_LIMITS.requestTimeoutSecs}`);
  });

  it('leave the gRPC message size unset by default (received up to --http-max-input-size), and take it when given', () => {
    expect(parseServeArgs([REPO]).grpcMaxMessageSize).toBeUndefined();
    expect(parseServeArgs([REPO, '--grpc-max-message-size=1048576']).grpcMaxMessageSize).toBe(1048576);
    expect(() => parseServeArgs([REPO, '--grpc-max-message-size=2147483648'])).toThrow();
  });

  it('take --grpc-max-connection-idle in ms', () => {
    expect(parseServeArgs([REPO]).grpcMaxConnectionIdleMs).toBeUndefined();
    expect(parseServeArgs([REPO, '--grpc-max-connection-idle=60000']).grpcMaxConnectionIdleMs).toBe(60000);
    expect(parseServeArgs([REPO, '--grpc-max-connection-idle', '0']).grpcMaxConnectionIdleMs).toBe(0);
  });
});
