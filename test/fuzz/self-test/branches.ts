/** Three paths and a loop, for coverage.spec.ts. */
export function classify(n: number): string {
  let out = '';
  if (n < 0) out = 'negative';
  else if (n === 0) out = 'zero';
  else for (let i = 0; i < n; i++) out += '+';
  return out;
}
