/**
 * Client-chosen keys (request parameters, load parameters, config maps) used as property names of
 * plain objects. Two things go wrong with a plain `obj[key]`:
 * - writing `obj['__proto__'] = v` replaces the object's prototype instead of adding a property
 *   (every other key, `constructor` and `toString` included, becomes an own property);
 * - reading `table[key]` for a key the table lacks finds `Object.prototype`'s members
 *   (`constructor`, `toString`, `hasOwnProperty`, `valueOf`, `__proto__`).
 * Lookup tables keyed by client text are Maps or read through `ownValue`; objects built from
 * client keys are written through `setOwn`.
 */

/** Sets an own enumerable property, `__proto__` included. */
export function setOwn<T extends Record<string, unknown>>(obj: T, key: string, value: T[string]): void {
  if (key === '__proto__') Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else (obj as Record<string, unknown>)[key] = value;
}

/** `obj[key]` when it is the object's own property, else undefined (never an inherited member). */
export function ownValue<V>(obj: Readonly<Record<string, V>>, key: string): V | undefined {
  return Object.prototype.hasOwnProperty.call(obj, key) ? obj[key] : undefined;
}
