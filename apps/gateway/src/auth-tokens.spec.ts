import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { parseTokensFile, TokenStore } from './auth-tokens';

const sha = (t: string) => createHash('sha256').update(t).digest('hex');

function tokensFile(text: string): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'nereid-tokens-')), 'tokens');
  writeFileSync(file, text);
  return file;
}

describe('parseTokensFile', () => {
  it('reads hashes and groups, * for every group, skipping comments and blank lines', () => {
    const entries = parseTokensFile(`# ops\n\n${sha('a')} inference,metadata\n  ${sha('b').toUpperCase()}   *  \n`);
    expect(entries.map((e) => [e.hash.toString('hex'), [...e.groups]])).toEqual([
      [sha('a'), ['inference', 'metadata']],
      [sha('b'), ['health', 'metadata', 'inference', 'shared-memory', 'model-config', 'model-repository', 'statistics', 'trace', 'logging']],
    ]);
  });

  it.each([
    ['plain-token inference', 'line 1: expected'],
    [`${sha('a')}`, 'line 1: expected'],
    [`\n${sha('a')} inference,admin`, "line 2: unknown api 'admin'"],
  ])('refuses %p', (text, words) => {
    expect(() => parseTokensFile(text)).toThrow(words);
  });
});

describe('TokenStore', () => {
  it('opens only the groups of the presented token', () => {
    const store = new TokenStore(tokensFile(`${sha('user')} inference\n${sha('admin')} model-repository,inference\n`));
    expect(store.check('health', undefined)).toBe('open');
    expect(store.check(undefined, undefined)).toBe('open');
    expect(store.check('inference', undefined)).toBe('unauthenticated');
    expect(store.check('inference', 'Basic dXNlcg==')).toBe('unauthenticated');
    expect(store.check('inference', 'Bearer wrong')).toBe('unauthenticated');
    expect(store.check('inference', 'Bearer user')).toBe('granted');
    expect(store.check('inference', 'bearer  admin')).toBe('granted');
    expect(store.check('model-repository', 'Bearer user')).toBe('forbidden');
    expect(store.check('model-repository', 'Bearer admin')).toBe('granted');
  });

  it('opens the groups of every line that lists the token, not only the first', () => {
    // The contract above: a group needs a token that opens it. A token on two lines opens both lines' groups.
    const store = new TokenStore(tokensFile(`${sha('ops')} metadata\n${sha('ops')} model-repository\n${sha('other')} logging\n`));
    expect(store.check('metadata', 'Bearer ops')).toBe('granted');
    expect(store.check('model-repository', 'Bearer ops')).toBe('granted');
    expect(store.check('logging', 'Bearer ops')).toBe('forbidden');
    expect(store.check('model-repository', 'Bearer other')).toBe('forbidden');
  });

  it('takes a changed file on reload and keeps the previous tokens when it does not parse', () => {
    const file = tokensFile(`${sha('user')} inference\n`);
    const errors: string[] = [];
    const store = new TokenStore(file, (m) => errors.push(m));
    writeFileSync(file, `${sha('other')} inference\n`);
    store.reload();
    expect(store.check('inference', 'Bearer user')).toBe('unauthenticated');
    expect(store.check('inference', 'Bearer other')).toBe('granted');
    writeFileSync(file, 'garbage\n');
    store.reload();
    expect(store.check('inference', 'Bearer other')).toBe('granted');
    expect(errors).toEqual([expect.stringContaining('auth tokens file not reloaded')]);
  });

  it('refuses at start a file that does not parse, names no token or cannot be read', () => {
    expect(() => new TokenStore(tokensFile('nope'))).toThrow('tokens file line 1');
    expect(() => new TokenStore(tokensFile(''))).toThrow('names no token');
    expect(() => new TokenStore(tokensFile('# only a comment\n\n'))).toThrow('names no token');
    expect(() => new TokenStore(path.join(tmpdir(), 'nereid-no-such-tokens-file'))).toThrow('cannot read the auth tokens file');
  });

  it('fails closed on reload: an emptied, removed or unreadable file keeps the previous tokens', () => {
    const file = tokensFile(`${sha('admin')} model-config,model-repository\n`);
    const errors: string[] = [];
    const store = new TokenStore(file, (m) => errors.push(m));
    for (const spoil of [() => writeFileSync(file, ''), () => writeFileSync(file, '# all gone\n'), () => rmSync(file, { force: true }), () => mkdirSync(file)]) {
      spoil();
      store.reload();
      expect(store.check('model-config', undefined)).toBe('unauthenticated');
      expect(store.check('model-repository', 'Bearer admin')).toBe('granted');
      rmSync(file, { recursive: true, force: true });
    }
    expect(errors).toEqual([
      expect.stringContaining('names no token'),
      expect.stringContaining('names no token'),
      expect.stringContaining('cannot read the auth tokens file'),
      expect.stringContaining('cannot read the auth tokens file'),
    ]);
    expect(errors.every((m) => m.startsWith('auth tokens file not reloaded, the previous tokens stay'))).toBe(true);
  });

  it('keeps a group protected until restart once some version of the file named it', () => {
    const file = tokensFile(`${sha('admin')} model-config,model-repository\n`);
    const errors: string[] = [];
    const store = new TokenStore(file, (m) => errors.push(m));
    writeFileSync(file, `${sha('user')} inference\n`);
    store.reload();
    expect(store.check('inference', 'Bearer user')).toBe('granted');
    expect(store.check('model-repository', undefined)).toBe('unauthenticated');
    expect(store.check('model-repository', 'Bearer user')).toBe('forbidden');
    expect(store.check('model-config', 'Bearer admin')).toBe('unauthenticated');
    expect(store.check('health', undefined)).toBe('open');
    expect(errors).toEqual(['auth tokens file reloaded; no token opens model-config, model-repository any more: protected until restart']);
  });
});
