import { timingSafeEqual } from 'node:crypto';
import { API_GROUPS, isApiGroup, type ApiGroup } from './api-groups';

/** `<api>[,<api>...]:<key>=<value>`: these groups need the header `key` with `value`. */
export interface Restriction {
  groups: ApiGroup[];
  key: string;
  value: string;
}

/** Triton's word for a group of this flag (`http-restricted-api`, `grpc-restricted-protocol`), in its messages. */
function featureOf(flag: string): 'api' | 'protocol' {
  return flag === 'grpc-restricted-protocol' ? 'protocol' : 'api';
}

const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/;

/**
 * Parses one `--http-restricted-api` / `--grpc-restricted-protocol` value (`flag`, without the
 * dashes) as Triton's ParseRestrictedFeatureOption does: the groups up to the first `:`, the key up
 * to the next `=`, the value after it (it may hold `:` and `=`); none of the three empty, nothing
 * trimmed. `earlier`: the restrictions of the same flag given before it, which may not name its
 * groups. Throws an Error with Triton's message (the CLI adds the flag).
 */
export function parseRestriction(text: string, flag: string = 'http-restricted-api', earlier: readonly Restriction[] = []): Restriction {
  const colon = text.indexOf(':');
  const eq = colon === -1 ? -1 : text.indexOf('=', colon + 1);
  const names = text.slice(0, colon);
  const key = text.slice(colon + 1, eq);
  const value = text.slice(eq + 1);
  if (colon === -1 || eq === -1 || !names || !key || !value) throw new Error(formatError(flag, text));
  // Nereid only: Triton takes any key, but one that is no header name could never be sent.
  if (!HEADER_NAME.test(key)) throw new Error(`restriction key must be a header name, got: '${key}'`);
  const feature = featureOf(flag);
  const seen = new Set<string>(earlier.flatMap((r) => r.groups));
  const groups: ApiGroup[] = [];
  // In Triton's order: each group is checked to be known, then to be new, before the next.
  for (const g of names.split(',')) {
    if (!isApiGroup(g)) throw new Error(`unknown restricted ${feature} '${g}', expected one of ${API_GROUPS.join(', ')}`);
    if (seen.has(g)) throw new Error(duplicate(feature, g));
    seen.add(g);
    groups.push(g);
  }
  return { groups, key, value };
}

function formatError(flag: string, text: string): string {
  return `--${flag} option format is '<config name>:<setting>=<value>'. Got ${text}`;
}

function duplicate(feature: string, group: string): string {
  return `restricted ${feature} '${group}' can not be specified in multiple config groups`;
}

/**
 * Refuses a set of restrictions that names one group twice (Triton refuses it at start-up), or one
 * with no group, key or value (restrictions given as options, not parsed: an empty value would let
 * an empty header in).
 */
export function checkRestrictions(list: readonly Restriction[], flag: string = 'http-restricted-api'): void {
  const seen = new Set<ApiGroup>();
  for (const r of list) {
    if (r.groups.length === 0 || !r.key || !r.value) throw new Error(formatError(flag, `${r.groups.join(',')}:${r.key}=${r.value}`));
    for (const g of r.groups) {
      if (seen.has(g)) throw new Error(duplicate(featureOf(flag), g));
      seen.add(g);
    }
  }
}

interface Requirement {
  /** Header (HTTP) or metadata key (gRPC) as configured, for messages. */
  header: string;
  /** The same in lower case, as Node and grpc-js hand them over. */
  lookup: string;
  expected: Buffer;
}

/** Which header each restricted group needs; answers whether a request may reach a group. */
export class ApiGuard {
  private readonly byGroup = new Map<ApiGroup, Requirement>();

  /** `prefix`: put before each key (gRPC's `triton-grpc-protocol-`). */
  constructor(restrictions: readonly Restriction[] = [], prefix = '') {
    checkRestrictions(restrictions, prefix ? 'grpc-restricted-protocol' : 'http-restricted-api');
    for (const r of restrictions) {
      for (const g of r.groups) this.byGroup.set(g, { header: prefix + r.key, lookup: (prefix + r.key).toLowerCase(), expected: Buffer.from(r.value) });
    }
  }

  get active(): boolean {
    return this.byGroup.size > 0;
  }

  /**
   * The header a request of this group lacks (missing or wrong value), or undefined when it may
   * go on. `read` gives the request's value of a header.
   */
  missingHeader(group: ApiGroup | undefined, read: (header: string) => string | undefined): string | undefined {
    if (group === undefined) return undefined;
    const need = this.byGroup.get(group);
    if (!need) return undefined;
    const actual = read(need.lookup);
    return actual !== undefined && sameBytes(Buffer.from(actual), need.expected) ? undefined : need.header;
  }
}

/** Constant-time for equal lengths; a length mismatch answers at once (the length is no secret worth a pad). */
function sameBytes(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
