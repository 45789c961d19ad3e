import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { scrubSecrets, sdkErrorReason, type RemoteObject, type RemoteStore } from './remote-store';

export interface SyncReport {
  downloaded: number;
  removed: number;
  /** Objects left out, each with the reason (a key that would leave the cache folder, a name clash). */
  skipped: string[];
}

/**
 * Why an object key cannot name a file inside the cache folder, or undefined when it can. Keys are
 * relative to the repository folder; `..`, `.`, empty segments, absolute paths, backslashes and
 * control characters are refused, so nothing is ever written outside the cache folder.
 */
export function objectKeyProblem(key: string): string | undefined {
  const body = key.endsWith('/') ? key.slice(0, -1) : key;
  if (body.length === 0) return 'empty key';
  if (body.startsWith('/')) return 'absolute path';
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f\\]/.test(body)) return 'control character or backslash';
  for (const seg of body.split('/')) {
    if (seg === '' || seg === '.' || seg === '..') return `path segment '${seg}'`;
  }
  return undefined;
}

/** Downloads in flight at once during a sync. */
const PARALLEL_DOWNLOADS = 8;

/** An ETag with its quotes (and weak marker) removed: listings and downloads do not quote alike. */
function sameVersion(a: string | undefined, b: string): boolean {
  const bare = (v: string): string => v.replace(/^W\//, '').replace(/"/g, '');
  return a !== undefined && bare(a) === bare(b);
}

/** Parent folders of a relative path, shortest first (`a/b/c` → `a`, `a/b`). */
function parents(rel: string): string[] {
  const segs = rel.split('/');
  return segs.slice(0, -1).map((_, i) => segs.slice(0, i + 1).join('/'));
}

/** The folders that `keys` (relative paths; a trailing `/` marks a folder) name or lie in. */
function foldersOf(keys: Iterable<string>): Set<string> {
  const out = new Set<string>();
  for (const k of keys) {
    if (k.endsWith('/')) out.add(k.slice(0, -1));
    for (const p of parents(k)) out.add(p);
  }
  return out;
}

/**
 * Keeps a local folder equal to a cloud repository folder: on each sync, objects whose version
 * (ETag / generation) changed are downloaded (to a staging folder, then renamed into place, so a
 * load never reads half a file), objects gone from the store are deleted, and unchanged files are
 * left alone (their mtimes too, so the repository manager sees no change). The local folder must
 * start empty: only what the sync wrote is ever touched.
 */
export class CacheSync {
  /** Relative path → version of every file (and folder marker) this sync wrote. */
  private readonly manifest = new Map<string, string>();

  constructor(
    private readonly store: RemoteStore,
    readonly localPath: string,
    private readonly stagingDir: string,
  ) {}

  /** One pass; rejects with the store's reason (credentials removed) when the store cannot be listed. */
  async sync(): Promise<SyncReport> {
    let objects: RemoteObject[];
    try {
      objects = await this.store.list();
    } catch (e) {
      throw this.failure(e);
    }
    const report: SyncReport = { downloaded: 0, removed: 0, skipped: [] };
    const wanted = new Map<string, RemoteObject>();
    for (const o of objects) {
      const problem = objectKeyProblem(o.key);
      if (problem) {
        report.skipped.push(`'${o.key}': ${problem}`);
        continue;
      }
      wanted.set(o.key, o);
    }
    const files = new Set([...wanted.keys()].filter((k) => !k.endsWith('/')));
    // A file and a folder of the same name: the folder wins (the file cannot exist beside it).
    const folders = foldersOf(wanted.keys());
    for (const f of files) {
      if (folders.has(f)) {
        report.skipped.push(`'${f}': a folder of the same name exists`);
        wanted.delete(f);
      }
    }

    const foldersBefore = this.folders();
    for (const rel of [...this.manifest.keys()]) {
      if (wanted.has(rel)) continue;
      await this.remove(rel);
      report.removed++;
    }
    if (report.removed > 0) await this.removeAbandonedFolders(foldersBefore);
    const changed = [...wanted].filter(([rel, o]) => !sameVersion(this.manifest.get(rel), o.version));
    // A few downloads at a time: a repository of many small files does not wait on each round trip.
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < changed.length) {
        const [rel, o] = changed[next++];
        try {
          if (rel.endsWith('/')) {
            await fs.mkdir(this.target(rel.slice(0, -1)), { recursive: true });
            this.manifest.set(rel, o.version);
          } else {
            this.manifest.set(rel, await this.fetch(rel, o));
            report.downloaded++;
          }
        } catch (e) {
          next = changed.length;
          throw this.failure(e, rel);
        }
      }
    };
    // Every download settles before the sync answers: none still writes when the next sync starts.
    const settled = await Promise.allSettled(Array.from({ length: Math.min(PARALLEL_DOWNLOADS, changed.length) }, worker));
    const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    return report;
  }

  /** Absolute local path of a checked relative key; never outside the cache folder. */
  private target(rel: string): string {
    const abs = path.resolve(this.localPath, ...rel.split('/'));
    if (!abs.startsWith(this.localPath + path.sep)) throw new Error(`object key '${rel}' leaves the repository folder`);
    return abs;
  }

  private async fetch(rel: string, o: RemoteObject): Promise<string> {
    const dest = this.target(rel);
    await fs.mkdir(path.dirname(dest), { recursive: true });
    const staged = path.join(this.stagingDir, `${process.pid}-${Math.random().toString(36).slice(2)}`);
    try {
      const version = await this.store.download(o, staged);
      await fs.rename(staged, dest);
      return version;
    } finally {
      await fs.rm(staged, { force: true });
    }
  }

  private async remove(rel: string): Promise<void> {
    this.manifest.delete(rel);
    const isFolder = rel.endsWith('/');
    const abs = this.target(isFolder ? rel.slice(0, -1) : rel);
    if (isFolder) await fs.rmdir(abs).catch(() => undefined);
    else await fs.rm(abs, { force: true });
  }

  /** Folders that hold (or are marked as) objects of the store, by relative path. */
  private folders(): Set<string> {
    return foldersOf(this.manifest.keys());
  }

  /**
   * After removals: folders that held objects of the store and hold none now are deleted with what
   * they hold, so that a model deleted from the store disappears from the cache even where its
   * backend wrote files of its own there (python's `__pycache__`). Elsewhere such files stay.
   */
  private async removeAbandonedFolders(before: Set<string>): Promise<void> {
    const now = this.folders();
    const gone = [...before].filter((f) => !now.has(f)).sort((a, b) => a.length - b.length);
    for (const f of gone) await fs.rm(this.target(f), { recursive: true, force: true });
  }

  private failure(e: unknown, rel?: string): Error {
    const what = rel ? `failed to fetch '${rel}' from model repository '${this.store.url}'` : `failed to read model repository '${this.store.url}'`;
    return new Error(scrubSecrets(`${what}: ${sdkErrorReason(e)}`, this.store.secrets()));
  }
}
