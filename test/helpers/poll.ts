/** Waiting in end-to-end tests: for a while, or until something holds. */

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Resolves once `check` holds (looked at every 20 ms); fails after `ms` naming `what`. */
export async function until(what: string, check: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** Resolves with what `get` returns once it is not undefined (looked at every 25 ms); fails after `tries` looks, naming `what`. */
export async function waitFor<T>(what: string, get: () => T | undefined | Promise<T | undefined>, tries = 200): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const v = await get();
    if (v !== undefined) return v;
    await sleep(25);
  }
  throw new Error(`timed out waiting for ${what}`);
}
