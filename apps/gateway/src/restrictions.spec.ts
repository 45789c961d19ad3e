import { ApiGuard, checkRestrictions, parseRestriction } from './restrictions';

describe('parseRestriction', () => {
  it('reads groups, key and a value that may hold : and =', () => {
    expect(parseRestriction('health,model-repository:Admin-Key=a:b=c')).toEqual({ groups: ['health', 'model-repository'], key: 'Admin-Key', value: 'a:b=c' });
    expect(parseRestriction('logging:k=')).toEqual({ groups: ['logging'], key: 'k', value: '' });
  });

  it.each([
    ['health', 'format'],
    ['health:key', 'format'],
    [':k=v', 'format'],
    ['health:=v', 'header name'],
    ['health:a b=v', 'header name'],
    ['health,admin:k=v', "unknown restricted api 'admin'"],
    ['health,:k=v', "unknown restricted api ''"],
  ])('refuses %p', (text, words) => {
    expect(() => parseRestriction(text)).toThrow(words);
  });
});

describe('checkRestrictions', () => {
  it('refuses a group named in two restrictions', () => {
    const list = [parseRestriction('health,trace:a=1'), parseRestriction('logging,trace:b=2')];
    expect(() => checkRestrictions(list)).toThrow("restricted api 'trace' can not be specified in multiple config groups");
    expect(() => checkRestrictions(list.slice(0, 1))).not.toThrow();
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
