import { mkdtempSync, promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { AzureStore } from './azure-store';
import { CacheSync, type SyncReport } from './cache-sync';
import { GcsStore } from './gcs-store';
import { isRemoteRepository, parseRemoteRepository, type RemoteLocation } from './remote-url';
import type { RemoteStore } from './remote-store';
import { S3Store } from './s3-store';

/** Triton's variables naming an existing empty folder to copy each kind of repository into. */
const MOUNT_DIRECTORY: Record<RemoteLocation['kind'], string> = {
  s3: 'TRITON_AWS_MOUNT_DIRECTORY',
  gs: 'TRITON_GCS_MOUNT_DIRECTORY',
  as: 'TRITON_AZURE_MOUNT_DIRECTORY',
};

export function remoteStore(location: RemoteLocation, env: NodeJS.ProcessEnv = process.env): RemoteStore {
  switch (location.kind) {
    case 's3':
      return new S3Store(location.url, location.bucket, location.prefix, location.endpoint, env);
    case 'gs':
      return new GcsStore(location.url, location.bucket, location.prefix, env);
    case 'as':
      return new AzureStore(location.url, location.account, location.container, location.prefix, env);
  }
}

interface Remote {
  store: RemoteStore;
  cache: CacheSync;
  /** Folder created by us (removed at close), or undefined for a mount directory the user named. */
  owned?: string;
  staging: string;
  /** Not synced yet: the cache folder is emptied first (a mount directory may hold an older copy). */
  fresh: boolean;
  /** Objects already warned about as not copied: each is named once, not at every poll. */
  warned: Set<string>;
}

export interface RemoteRepositoriesOptions {
  env?: NodeJS.ProcessEnv;
  log?: (level: 'info' | 'warn' | 'error' | 'verbose', message: string) => void;
  /**
   * A sync finished this recently is reused (ms), so that a poll's scan and the loads it starts list
   * each store once. Default 0: every scan lists (an explicit load must see the bucket as it is).
   */
  reuseMs?: number;
}

/**
 * The repositories given to `--model-repository`, cloud ones copied into local cache folders.
 * `prepare()` brings every cloud copy up to date and returns the local paths in the given order;
 * local repositories pass through untouched.
 */
export class RemoteRepositories {
  private readonly remotes = new Map<number, Remote>();
  private readonly paths: string[];
  private inFlight?: Promise<string[]>;
  private lastSync = -Infinity;
  private readonly reuseMs: number;

  constructor(
    repositories: readonly string[],
    private readonly options: RemoteRepositoriesOptions = {},
  ) {
    const env = options.env ?? process.env;
    this.reuseMs = options.reuseMs ?? 0;
    this.paths = repositories.map((repo, i) => {
      if (!isRemoteRepository(repo)) return repo;
      const location = parseRemoteRepository(repo);
      const store = remoteStore(location, env);
      const mount = env[MOUNT_DIRECTORY[location.kind]];
      let localPath: string;
      let owned: string | undefined;
      let staging: string;
      if (mount) {
        localPath = path.resolve(mount, String(i));
        staging = path.resolve(mount, `.staging-${i}`);
      } else {
        owned = mkdtempSync(path.join(tmpdir(), `nereid-${location.kind}-`));
        localPath = path.join(owned, 'repository');
        staging = path.join(owned, 'staging');
      }
      this.remotes.set(i, { store, cache: new CacheSync(store, localPath, staging), owned, staging, fresh: true, warned: new Set() });
      return localPath;
    });
  }

  /** True when any repository is a cloud one. */
  get hasRemote(): boolean {
    return this.remotes.size > 0;
  }

  /** Local paths of the repositories (cloud ones: their cache folders), as of the last sync. */
  localPaths(): string[] {
    return [...this.paths];
  }

  /**
   * Each cloud repository's cache folder with the repository's URL, for messages to name the URL
   * (`s3://bucket/path/m/config.pbtxt`) where a file of the copy is meant: the user never sees
   * the server's cache folders.
   */
  shownPaths(): { local: string; shown: string }[] {
    return [...this.remotes.values()].map((r) => ({ local: r.cache.localPath, shown: r.store.url }));
  }

  /**
   * Syncs every cloud repository and returns the local paths. Concurrent calls share one sync, and a
   * sync finished within `reuseMs` is reused. Rejects with the first repository that cannot be read.
   */
  prepare(): Promise<string[]> {
    if (this.remotes.size === 0) return Promise.resolve(this.localPaths());
    if (this.inFlight) return this.inFlight;
    if (performance.now() - this.lastSync < this.reuseMs) return Promise.resolve(this.localPaths());
    this.inFlight = this.syncAll().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  private async syncAll(): Promise<string[]> {
    const results = await Promise.allSettled([...this.remotes.values()].map((r) => this.syncOne(r)));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    this.lastSync = performance.now();
    return this.localPaths();
  }

  private async syncOne(remote: Remote): Promise<SyncReport> {
    if (remote.fresh) {
      await fs.rm(remote.cache.localPath, { recursive: true, force: true });
      remote.fresh = false;
    }
    await fs.mkdir(remote.cache.localPath, { recursive: true });
    await fs.mkdir(remote.staging, { recursive: true });
    const report = await remote.cache.sync();
    const log = this.options.log;
    if (log && (report.downloaded > 0 || report.removed > 0)) {
      log('verbose', `model repository '${remote.store.url}': ${report.downloaded} file(s) fetched, ${report.removed} removed`);
    }
    for (const s of report.skipped) {
      if (remote.warned.has(s)) continue;
      remote.warned.add(s);
      log?.('warn', `model repository '${remote.store.url}': object ${s} is not copied`);
    }
    return report;
  }

  /** Closes the SDK clients and deletes the cache folders this object created. */
  async close(): Promise<void> {
    await this.inFlight?.catch(() => undefined);
    for (const r of this.remotes.values()) {
      r.store.close();
      if (r.owned) await fs.rm(r.owned, { recursive: true, force: true });
      else await fs.rm(r.staging, { recursive: true, force: true });
    }
  }
}
