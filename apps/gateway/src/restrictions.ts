import { timingSafeEqual } from 'node:crypto';
import { API_GROUPS, isApiGroup, type ApiGroup } from './api-groups';

/** `<api>[,<api>...]:<key>=<value>`: these groups need the header `key` with `value`. */
export interface Restriction {
  groups: ApiGroup[];
  key: string;
  value: string;
}

/**
 * Parses one `--http-restricted-api` / `--grpc-restricted-protocol` value. Throws an Error whose
 * message says what is wrong (the CLI adds the flag).
 */
export function parseRestriction(text: string): Restriction {
  const colon = text.indexOf(':');
  const eq = colon === -1 ? -1 : text.indexOf('=', colon);
  if (colon <= 0 || eq === -1) throw new Error(`restricted api format is '<api>[,<api>...]:<key>=<value>', got: ${text}`);
  const key = text.slice(colon + 1, eq).trim();
  const value = text.slice(eq + 1);
  if (!key || !/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(key)) throw new Error(`restriction key must be a header name, got: '${key}'`);
  const groups = text
    .slice(0, colon)
    .split(',')
    .map((g) => g.trim());
  for (const g of groups) {
    if (!isApiGroup(g)) throw new Error(`unknown restricted api '${g}', expected one of ${API_GROUPS.join(', ')}`);
  }
  return { groups: groups as ApiGroup[], key, value };
}

/** Refuses a set of restrictions that names one group twice (Triton refuses it at start-up). */
export function checkRestrictions(list: readonly Restriction[]): void {
  const seen = new Set<ApiGroup>();
  for (const r of list) {
    for (const g of r.groups) {
      if (seen.has(g)) throw new Error(`restricted api '${g}' can not be specified in multiple config groups`);
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
    checkRestrictions(restrictions);
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
