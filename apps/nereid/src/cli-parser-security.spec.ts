import { parseServeArgs, UsageError } from './cli-parser';

const REPO = '--model-repository=/models';

describe('restricted API flags', () => {
  it('are repeatable and kept apart per protocol', () => {
    const o = parseServeArgs([
      REPO,
      '--http-restricted-api=model-repository,logging:admin-key=a=b',
      '--http-restricted-api',
      'inference:user-key=u',
      '--grpc-restricted-protocol=health:k=v',
    ]);
    expect(o.httpRestrictedApis).toEqual([
      { groups: ['model-repository', 'logging'], key: 'admin-key', value: 'a=b' },
      { groups: ['inference'], key: 'user-key', value: 'u' },
    ]);
    expect(o.grpcRestrictedProtocols).toEqual([{ groups: ['health'], key: 'k', value: 'v' }]);
    expect(parseServeArgs([REPO]).httpRestrictedApis).toEqual([]);
  });

  it('refuse a group in two restrictions of one protocol at start', () => {
    const run = () => parseServeArgs([REPO, '--grpc-restricted-protocol=trace,logging:a=1', '--grpc-restricted-protocol=logging:b=2']);
    expect(run).toThrow(UsageError);
    expect(run).toThrow('Bad option: "--grpc-restricted-protocol".\nrestricted protocol \'logging\' can not be specified in multiple config groups');
    expect(() => parseServeArgs([REPO, '--http-restricted-api=logging:a=1', '--grpc-restricted-protocol=logging:b=2'])).not.toThrow();
  });

  it('refuse unknown groups and malformed values', () => {
    expect(() => parseServeArgs([REPO, '--http-restricted-api=admin:k=v'])).toThrow("unknown restricted api 'admin'");
    expect(() => parseServeArgs([REPO, '--http-restricted-api=logging'])).toThrow('Bad option: "--http-restricted-api".');
  });
});

describe('--allow-model-file-overrides', () => {
  it('is off by default and takes a bool', () => {
    expect(parseServeArgs([REPO]).allowModelFileOverrides).toBe(false);
    expect(parseServeArgs([REPO, '--allow-model-file-overrides']).allowModelFileOverrides).toBe(true);
    expect(parseServeArgs([REPO, '--allow-model-file-overrides=false']).allowModelFileOverrides).toBe(false);
    expect(() => parseServeArgs([REPO, '--allow-model-file-overrides=maybe'])).toThrow(UsageError);
  });
});

describe('--auth-tokens-file', () => {
  it('takes a path', () => {
    expect(parseServeArgs([REPO, '--auth-tokens-file=/etc/nereid/tokens']).authTokensFile).toBe('/etc/nereid/tokens');
    expect(parseServeArgs([REPO]).authTokensFile).toBeUndefined();
  });
});
