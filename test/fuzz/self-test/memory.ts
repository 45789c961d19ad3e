/** Keeps allocating for an input whose first byte is above 250 (the seed's is 0). */
import type { FuzzTarget } from '../target';

const held: number[][] = [];

export const target: FuzzTarget = {
  coverage: [__filename],
  maxLength: 8,
  dictionary: [],
  seeds: () => [Uint8Array.of(0, 0)],
  run(input) {
    if (input.length === 0 || input[0] <= 250) return;
    for (;;) held.push(new Array<number>(1 << 20).fill(1));
  },
};
