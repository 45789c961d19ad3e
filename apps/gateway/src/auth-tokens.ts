import { createHash, timingSafeEqual } from 'node:crypto';
import * as fs from 'node:fs';
import { API_GROUPS, isApiGroup, type ApiGroup } from './api-groups';

/** One line of the tokens file: the SHA-256 of a token and the groups it opens. */
interface TokenEntry {
  hash: Buffer;
  groups: Set<ApiGroup>;
}

/** What a request's credentials allow for a group. */
export type TokenVerdict = 'open' | 'granted' | 'unauthenticated' | 'forbidden';

/**
 * Parses a tokens file: one `<sha256 hex of the token> <api>[,<api>...]` per line (`*` = every
 * group), blank lines and `#` comments ignored. Throws naming the line at fault.
 */
export function parseTokensFile(text: string): TokenEntry[] {
  const out: TokenEntry[] = [];
  text.split('\n').forEach((line, i) => {
    const t = line.trim();
    if (!t || t.startsWith('#')) return;
    const m = /^([0-9a-fA-F]{64})\s+(\S+)$/.exec(t);
    if (!m) throw new Error(`tokens file line ${i + 1}: expected '<sha256 hex> <api>[,<api>...]'`);
    const names = m[2] === '*' ? [...API_GROUPS] : m[2].split(',');
    for (const g of names) if (!isApiGroup(g)) throw new Error(`tokens file line ${i + 1}: unknown api '${g}'`);
    out.push({ hash: Buffer.from(m[1], 'hex'), groups: new Set(names as ApiGroup[]) });
  });
  return out;
}

/**
 * Bearer tokens (`--auth-tokens-file`), kept only as hashes. Every group some token opens needs
 * `Authorization: Bearer <token>` of a token that opens it. The file is re-read when it changes.
 *
 * It fails closed: a file that names no token, cannot be read or does not parse is refused at
 * start and, on a re-read, keeps the previous tokens (reported through `onError`); and a group
 * once protected stays protected until restart, even when no line names it any more (an editor's
 * truncate-then-write, a half-copied file or a mistaken edit must not open the control APIs).
 */
export class TokenStore {
  private entries: TokenEntry[];
  /** Every group some accepted version of the file named: only ever grows. */
  private readonly restricted = new Set<ApiGroup>();

  constructor(
    private readonly file: string,
    private readonly onError: (message: string) => void = () => undefined,
  ) {
    this.entries = this.read();
    this.index();
  }

  /** Re-reads the file on change (polled: editors that replace the file are seen too). */
  watch(intervalMs = 1000): void {
    fs.watchFile(this.file, { interval: intervalMs, persistent: false }, () => this.reload());
  }

  close(): void {
    fs.unwatchFile(this.file);
  }

  reload(): void {
    let entries: TokenEntry[];
    try {
      entries = this.read();
    } catch (e) {
      this.onError(`auth tokens file not reloaded, the previous tokens stay: ${(e as Error).message}`);
      return;
    }
    this.entries = entries;
    this.index();
    const unnamed = [...this.restricted].filter((g) => !entries.some((e) => e.groups.has(g)));
    if (unnamed.length > 0) {
      this.onError(`auth tokens file reloaded; no token opens ${unnamed.join(', ')} any more: protected until restart`);
    }
  }

  /** The file's entries; throws when it cannot be read, does not parse or names no token. */
  private read(): TokenEntry[] {
    let text: string;
    try {
      text = fs.readFileSync(this.file, 'utf8');
    } catch (e) {
      throw new Error(`cannot read the auth tokens file ${this.file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
    const entries = parseTokensFile(text);
    if (entries.length === 0) throw new Error(`the auth tokens file ${this.file} names no token`);
    return entries;
  }

  private index(): void {
    for (const e of this.entries) for (const g of e.groups) this.restricted.add(g);
  }

  /** The verdict for a request of `group` carrying this `Authorization` value. */
  check(group: ApiGroup | undefined, authorization: string | undefined): TokenVerdict {
    if (group === undefined || !this.restricted.has(group)) return 'open';
    const m = authorization === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!m) return 'unauthenticated';
    const hash = createHash('sha256').update(m[1]).digest();
    // Every entry is compared (constant time each), whichever matches; a token listed on several
    // lines opens the groups of all of them.
    let known = false;
    let opens = false;
    for (const e of this.entries) {
      if (timingSafeEqual(e.hash, hash)) {
        known = true;
        if (e.groups.has(group)) opens = true;
      }
    }
    if (!known) return 'unauthenticated';
    return opens ? 'granted' : 'forbidden';
  }
}
