import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { parseVersionDir } from '@nereid/repository';

/**
 * What a reload compares to tell what changed in a model folder: each file's path, size and
 * modification time, gathered in one walk (the stats in parallel: a reload under load must not
 * wait for one file system round trip per file in turn).
 */
export interface FolderFingerprint {
  /** The whole folder. */
  all: string;
  /** The files outside version folders (config.pbtxt, label files, warmup/, initial_state/...), which every version uses. */
  shared: string;
  /** Version number → its folder's files (the first folder naming that version, as `versionDir` picks it). */
  versions: Map<number, string>;
}

/** Deeper folders are not looked at (as `fingerprint` in libs/repository). */
const MAX_DEPTH = 4;

async function walk(dir: string, rel: string, depth: number): Promise<string[]> {
  if (depth > MAX_DEPTH) return [];
  const names = (await fs.readdir(dir).catch(() => [] as string[])).sort();
  const parts = await Promise.all(
    names.map(async (name): Promise<string[]> => {
      const p = path.join(dir, name);
      const r = rel ? `${rel}/${name}` : name;
      const st = await fs.stat(p).catch(() => undefined);
      if (!st) return [];
      if (st.isDirectory()) return walk(p, r, depth + 1);
      return [`${r}:${st.size}:${st.mtimeMs}`];
    }),
  );
  return parts.flat();
}

export async function folderFingerprint(modelDir: string): Promise<FolderFingerprint> {
  const names = (await fs.readdir(modelDir).catch(() => [] as string[])).sort();
  const shared: string[] = [];
  const versions = new Map<number, string>();
  const all: string[] = [];
  const parts = await Promise.all(
    names.map(async (name) => {
      const p = path.join(modelDir, name);
      const st = await fs.stat(p).catch(() => undefined);
      if (!st) return { name, isDir: false, text: '' };
      if (!st.isDirectory()) return { name, isDir: false, text: `${name}:${st.size}:${st.mtimeMs}` };
      return { name, isDir: true, text: (await walk(p, name, 1)).join('|') };
    }),
  );
  for (const { name, isDir, text } of parts) {
    if (!text && !isDir) continue;
    all.push(`${name}[${text}]`);
    const v = isDir ? parseVersionDir(name) : undefined;
    if (v === undefined) shared.push(`${name}[${text}]`);
    else if (!versions.has(v)) versions.set(v, text);
  }
  return { all: all.join('|'), shared: shared.join('|'), versions };
}

/** The source of one version: its completed config, the shared files and its own folder's files. */
export function versionSource(configText: string, fp: FolderFingerprint, version: number): string {
  return `${configText}\n${fp.shared}\n${fp.versions.get(version) ?? ''}`;
}
