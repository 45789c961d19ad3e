import { dictionaryOf, mutate, Rng, type MutationContext } from './mutate';

describe('Rng', () => {
  it('gives the same sequence for the same seed, within bounds', () => {
    const a = new Rng(42);
    const b = new Rng(42);
    const xs = Array.from({ length: 100 }, () => a.below(10));
    expect(Array.from({ length: 100 }, () => b.below(10))).toEqual(xs);
    expect(xs.every((x) => x >= 0 && x < 10)).toBe(true);
    expect(new Set(xs).size).toBe(10);
  });
});

describe('mutate', () => {
  const seed = new Uint8Array(Buffer.from('{"inputs":[{"name":"x","shape":[2],"data":[1,2]}]}'));
  const context = (maxLength: number, tokens: string[] = []): MutationContext => ({
    maxLength,
    dictionary: dictionaryOf(tokens),
    other: () => new Uint8Array(Buffer.from('other entry')),
  });

  it('never returns more than maxLength bytes', () => {
    const rng = new Rng(1);
    for (let i = 0; i < 2000; i++) expect(mutate(rng, seed, context(40)).length).toBeLessThanOrEqual(40);
  });

  it('produces varied inputs, leaves its input alone, and uses the dictionary, splices and edge numbers', () => {
    const rng = new Rng(7);
    const before = Buffer.from(seed);
    const outs = Array.from({ length: 3000 }, () => Buffer.from(mutate(rng, seed, context(4096, ['"binary_data_size"']))).toString('latin1'));
    expect(Buffer.from(seed)).toEqual(before);
    expect(new Set(outs).size).toBeGreaterThan(2500);
    expect(outs.some((o) => o.includes('"binary_data_size"'))).toBe(true);
    expect(outs.some((o) => o.includes('other'))).toBe(true);
    expect(outs.some((o) => o.includes('18446744073709551616') || o.includes('9223372036854775808'))).toBe(true);
  });

  it('grows an empty input', () => {
    const rng = new Rng(3);
    expect(Array.from({ length: 200 }, () => mutate(rng, new Uint8Array(0), context(64)).length).some((n) => n > 0)).toBe(true);
  });
});
