import { applyRequestParameters, newInferenceRequest } from './parameters';
import { ownValue, setOwn } from './own-keys';

const PROTOTYPE_NAMES = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf'];

describe('client keys on plain objects', () => {
  it('setOwn makes every key an own property, __proto__ included, and leaves the prototype alone', () => {
    const obj: Record<string, unknown> = {};
    for (const key of PROTOTYPE_NAMES) setOwn(obj, key, { polluted: key });
    expect(Object.getPrototypeOf(obj)).toBe(Object.prototype);
    expect(Object.keys(obj)).toEqual(PROTOTYPE_NAMES);
    expect(JSON.parse(JSON.stringify(obj))).toEqual(Object.fromEntries(PROTOTYPE_NAMES.map((k) => [k, { polluted: k }])));
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('ownValue never returns an inherited member', () => {
    const table: Record<string, number> = { a: 1 };
    expect(ownValue(table, 'a')).toBe(1);
    for (const key of PROTOTYPE_NAMES) expect(ownValue(table, key)).toBeUndefined();
  });

  it('request parameters named like Object.prototype members reach the model as custom parameters', () => {
    const params = JSON.parse('{"__proto__": "a", "constructor": "b", "toString": 1, "hasOwnProperty": true, "valueOf": 2.5}');
    const request = newInferenceRequest('m', -1);
    applyRequestParameters(request, params);
    expect(Object.getPrototypeOf(request.parameters)).toBe(Object.prototype);
    expect(Object.keys(request.parameters)).toEqual(PROTOTYPE_NAMES);
    expect(request.parameters.__proto__).toBe('a');
    expect(request.parameters.toString).toBe(1);
  });
});
