import { ApiGuard, checkRestrictions, parseRestriction } from './restrictions';

describe('parseRestriction', () => {
  it('reads groups, key and a value that may hold : and =', () => {
    expect(parseRestriction('health,model-repository:Admin-Key=a:b=c')).toEqual({ groups: ['health', 'model-repository'], key: 'Admin-Key', value: 'a:b=c' });
    expect(parseRestriction('logging:k==', 'grpc-restricted-protocol')).toEqual({ groups: ['logging'], key: 'k', value: '=' });
  });

  // Triton's ParseGenericConfigOption: no ':', no '=' after it, or an empty name, setting or value.
  it.each(['health', 'health:key', ':k=v', 'health:=v', 'logging:k=', 'health=v:k'])('refuses %p with Triton\'s format message', (text) => {
    expect(() => parseRestriction(text)).toThrow(new Error(`--http-restricted-api option format is '<config name>:<setting>=<value>'. Got ${text}`));
    expect(() => parseRestriction(text, 'grpc-restricted-protocol')).toThrow(
      new Error(`--grpc-restricted-protocol option format is '<config name>:<setting>=<value>'. Got ${text}`),
    );
  });

  it.each([
    ['health,admin:k=v', "unknown restricted api 'admin', expected one of health, metadata, inference"],
    ['health,:k=v', "unknown restricted api '', expected"],
    ['health, metadata:k=v', "unknown restricted api ' metadata', expected"],
    ['inference,inference:k=v', "restricted api 'inference' can not be specified in multiple config groups"],
    ['health,health,admin:k=v', "restricted api 'health' can not be specified in multiple config groups"],
    ['health:a b=v', "restriction key must be a header name, got: 'a b'"],
  ])('refuses %p', (text, words) => {
    expect(() => parseRestriction(text)).toThrow(words);
  });

  it("says 'protocol' for --grpc-restricted-protocol, as Triton does", () => {
    expect(() => parseRestriction('model-reposit,health:k1=v1', 'grpc-restricted-protocol')).toThrow(/^unknown restricted protocol 'model-reposit'/);
    expect(() => parseRestriction('model-reposit,health:k1=v1')).toThrow(/^unknown restricted api 'model-reposit'/);
    const earlier = [parseRestriction('model-repository,health:k1=v1', 'grpc-restricted-protocol')];
    expect(() => parseRestriction('metadata,health:k2=v2', 'grpc-restricted-protocol', earlier)).toThrow(
      new Error("restricted protocol 'health' can not be specified in multiple config groups"),
    );
    expect(() => parseRestriction('metadata,health:k2=v2', 'http-restricted-api', earlier)).toThrow(
      new Error("restricted api 'health' can not be specified in multiple config groups"),
    );
  });
});

describe('checkRestrictions', () => {
  it('refuses a group named in two restrictions', () => {
    const list = [parseRestriction('health,trace:a=1'), parseRestriction('logging,trace:b=2')];
    expect(() => checkRestrictions(list)).toThrow(new Error("restricted api 'trace' can not be specified in multiple config groups"));
    expect(() => checkRestrictions(list, 'grpc-restricted-protocol')).toThrow(new Error("restricted protocol 'trace' can not be specified in multiple config groups"));
    expect(() => new ApiGuard(list, 'triton-grpc-protocol-')).toThrow("restricted protocol 'trace'");
    expect(() => checkRestrictions(list.slice(0, 1))).not.toThrow();
  });

  it('refuses a restriction given as an option with an empty value, key or group list', () => {
    expect(() => new ApiGuard([{ groups: ['logging'], key: 'k', value: '' }])).toThrow(
      new Error("--http-restricted-api option format is '<config name>:<setting>=<value>'. Got logging:k="),
    );
    expect(() => checkRestrictions([{ groups: ['logging'], key: '', value: 'v' }], 'grpc-restricted-protocol')).toThrow("--grpc-restricted-protocol option format");
    expect(() => checkRestrictions([{ groups: [], key: 'k', value: 'v' }])).toThrow('option format');
  });
});

describe('ApiGuard', () => {
  const guard = new ApiGuard([parseRestriction('inference,metadata:My-Key=s3cret')], 'pre-');
  const headers = (h: Record<string, string>) => (name: string) => h[name];

  it('asks restricted groups for the prefixed header, compared exactly', () => {
    expect(guard.active).toBe(true);
    expect(guard.missingHeader('inference', headers({ 'pre-my-key': 's3cret' }))).toBeUndefined();
    expect(guard.missingHeader('inference', headers({}))).toBe('pre-My-Key');
    expect(guard.missingHeader('metadata', headers({ 'pre-my-key': 's3cre' }))).toBe('pre-My-Key');
    expect(guard.missingHeader('metadata', headers({ 'pre-my-key': 's3cret ' }))).toBe('pre-My-Key');
    expect(guard.missingHeader('metadata', headers({ 'pre-my-key': 'S3CRET' }))).toBe('pre-My-Key');
    expect(guard.missingHeader('metadata', headers({ 'my-key': 's3cret' }))).toBe('pre-My-Key');
  });

  it('lets other groups and unknown paths through', () => {
    expect(guard.missingHeader('health', headers({}))).toBeUndefined();
    expect(guard.missingHeader(undefined, headers({}))).toBeUndefined();
    expect(new ApiGuard().active).toBe(false);
  });
});
