import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { fingerprint, parseVersionDir } from '@nereid/repository';

/**
 * What a reload compares to tell which versions changed: the files of a model folder outside its
 * version folders (config.pbtxt, label files, warmup/, initial_state/...), which every version
 * uses, as names, sizes and modification times.
 */
export async function sharedFingerprint(modelDir: string): Promise<string> {
  const entries = await fs.readdir(modelDir, { withFileTypes: true }).catch(() => []);
  const parts: string[] = [];
  for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    const p = path.join(modelDir, e.name);
    const st = await fs.stat(p).catch(() => undefined);
    if (!st) continue;
    if (st.isDirectory()) {
      if (parseVersionDir(e.name) !== undefined) continue;
      parts.push(`${e.name}/[${await fingerprint(p)}]`);
    } else parts.push(`${e.name}:${st.size}:${st.mtimeMs}`);
  }
  return parts.join('|');
}

/** The source of one version: its completed config, the shared files and its own folder's files. */
export async function versionSource(configText: string, shared: string, versionDir: string): Promise<string> {
  return `${configText}\n${shared}\n${await fingerprint(versionDir)}`;
}
