/**
 * A planted bug behind six nested checks (each byte's low three bits): 8^6 = 262,144 random tries
 * on average, a few thousand when coverage guides the search (each check passed is a new block).
 */
import type { FuzzTarget } from '../target';

const KEY = [5, 1, 7, 2, 6, 3];

export const target: FuzzTarget = {
  coverage: [__filename],
  maxLength: 16,
  dictionary: [],
  seeds: () => [new Uint8Array(6)],
  run(input) {
    if (input.length < 6) return;
    if ((input[0] & 7) === KEY[0]) {
      if ((input[1] & 7) === KEY[1]) {
        if ((input[2] & 7) === KEY[2]) {
          if ((input[3] & 7) === KEY[3]) {
            if ((input[4] & 7) === KEY[4]) {
              if ((input[5] & 7) === KEY[5]) {
                throw new TypeError('planted bug reached');
              }
            }
          }
        }
      }
    }
  },
};
