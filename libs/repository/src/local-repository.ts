import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { isValidModelName } from '@nereid/model-config';
import { parseVersionDir } from './versions';

/** Where a model lives on disk. */
export interface ModelLocation {
  name: string;
  repository: string;
  /** Absolute path of `<repo>/<model>`. */
  path: string;
}

export interface RepositoryScan {
  /** Models found in exactly one repository. */
  models: Map<string, ModelLocation>;
  /** Names present in two or more repositories (not served). */
  duplicates: Set<string>;
}

async function subdirectories(dir: string): Promise<string[]> {
  const entries = await fs.readdir(dir, { withFileTypes: true });
  const out: string[] = [];
  for (const e of entries) {
    if (e.isDirectory()) out.push(e.name);
    else if (e.isSymbolicLink()) {
      const st = await fs.stat(path.join(dir, e.name)).catch(() => undefined);
      if (st?.isDirectory()) out.push(e.name);
    }
  }
  return out.sort();
}

/**
 * Lists every model directory of the given local repositories. A repository that is not a directory
 * throws. Directories whose names cannot name a model (control characters, see `modelNameProblem`)
 * are not models.
 */
export async function scanRepositories(repositories: readonly string[]): Promise<RepositoryScan> {
  const models = new Map<string, ModelLocation>();
  const duplicates = new Set<string>();
  for (const repo of repositories) {
    const root = path.resolve(repo);
    const st = await fs.stat(root).catch(() => undefined);
    if (!st?.isDirectory()) {
      throw new Error(`failed to stat file ${repo}: the model repository does not exist or is not a directory`);
    }
    for (const name of await subdirectories(root)) {
      if (!isValidModelName(name)) continue;
      if (models.has(name) || duplicates.has(name)) {
        models.delete(name);
        duplicates.add(name);
        continue;
      }
      models.set(name, { name, repository: root, path: path.join(root, name) });
    }
  }
  return { models, duplicates };
}

/** Version numbers present in a model directory, ascending. */
export async function listVersions(modelDir: string): Promise<number[]> {
  const versions: number[] = [];
  for (const name of await subdirectories(modelDir)) {
    const v = parseVersionDir(name);
    if (v !== undefined && !versions.includes(v)) versions.push(v);
  }
  return versions.sort((a, b) => a - b);
}

/** Directory of a version (the first sub-directory parsing to that number). */
export async function versionDir(modelDir: string, version: number): Promise<string> {
  for (const name of await subdirectories(modelDir)) {
    if (parseVersionDir(name) === version) return path.join(modelDir, name);
  }
  return path.join(modelDir, String(version));
}

/**
 * The config file text of a model, or undefined when there is none. With a custom config name,
 * `configs/<name>.pbtxt` is preferred when present.
 */
export async function readConfigText(
  modelDir: string,
  configName?: string,
): Promise<{ file: string; text: string } | undefined> {
  const candidates = configName
    ? [path.join(modelDir, 'configs', `${configName}.pbtxt`), path.join(modelDir, 'config.pbtxt')]
    : [path.join(modelDir, 'config.pbtxt')];
  for (const file of candidates) {
    const text = await fs.readFile(file, 'utf8').catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT') return undefined;
      throw e;
    });
    if (text !== undefined) return { file, text };
  }
  return undefined;
}

/** A fingerprint of a model dir's files (paths, sizes, mtimes) to tell whether a reload is needed. */
export async function fingerprint(modelDir: string): Promise<string> {
  const parts: string[] = [];
  async function walk(dir: string, depth: number): Promise<void> {
    if (depth > 4) return;
    const entries = await fs.readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) await walk(p, depth + 1);
      else {
        const st = await fs.stat(p).catch(() => undefined);
        if (st) parts.push(`${path.relative(modelDir, p)}:${st.size}:${st.mtimeMs}`);
      }
    }
  }
  await walk(modelDir, 0);
  return parts.join('|');
}
