/** Never returns for an input longer than 8 bytes (the seed is 4). */
import type { FuzzTarget } from '../target';

export const target: FuzzTarget = {
  coverage: [__filename],
  maxLength: 64,
  dictionary: [],
  seeds: () => [Uint8Array.of(1, 2, 3, 4)],
  run(input) {
    let spins = 0;
    while (input.length > 8) spins++;
    if (spins < 0) throw new Error('unreachable');
  },
};
