import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { MAX_MODEL_NAME_BYTES } from '@nereid/model-config';
import { echo, hasControlCharacters, InferenceError } from '@nereid/protocol';
import type { ModelLocation } from '@nereid/repository';
import { hideServerPaths } from './server-paths';

/** Prefix of the load parameters that carry a file of an override model folder. */
const FILE_PARAMETER_PREFIX = 'file:';

const TEMP_PREFIX = 'nereid-override-';

/** Where the reasons of a failed write go (the server log): the client gets Triton's words only. */
export type OverrideLog = (message: string) => void;

/** Longest file name a file system takes (NAME_MAX), in bytes. */
const NAME_MAX_BYTES = MAX_MODEL_NAME_BYTES;
/**
 * Longest relative path of an override file, in bytes: PATH_MAX (4096) less room for the
 * temporary folder and the model's name.
 */
const RELATIVE_PATH_MAX_BYTES = 3072;

function invalidFile(key: string, why: string): InferenceError {
  return InferenceError.invalidArg(`Invalid file parameter '${echo(key)}'${why}`);
}

/**
 * Triton's answer when the override folder cannot be made (a name longer than the file system
 * takes, a failed write): the load's poll of the repository failed (INTERNAL). What went wrong is
 * logged; the answer never shows a server path.
 */
function pollFailure(model: string): InferenceError {
  return InferenceError.internal(`failed to load '${model}', failed to poll from model repository`);
}

/**
 * The path inside the model folder that a `file:<version>/<path>` parameter names, as its
 * segments. Relative, `/`-separated, no empty segment (no leading or trailing slash), no `.` or
 * `..`, no control characters: a file strictly inside the override folder.
 */
export function overrideFilePath(key: string): string[] {
  if (!key.startsWith(FILE_PARAMETER_PREFIX)) throw invalidFile(key, ` must start with '${FILE_PARAMETER_PREFIX}'`);
  const rel = key.slice(FILE_PARAMETER_PREFIX.length);
  const segments = rel.split('/');
  if (rel.startsWith('/') || segments.includes('..')) throw invalidFile(key, ' must stay within model directory.');
  const malformed =
    rel === '' ||
    hasControlCharacters(rel) ||
    segments.some((s) => s === '' || s === '.');
  if (malformed) throw invalidFile(key, " must name a file of the model directory: 'file:<version>/<path>'");
  return segments;
}

/** Whether the file system takes the path: no name over NAME_MAX, the whole within PATH_MAX. */
function fitsFileSystem(segments: readonly string[]): boolean {
  return (
    segments.every((s) => Buffer.byteLength(s, 'utf8') <= NAME_MAX_BYTES) &&
    Buffer.byteLength(segments.join('/'), 'utf8') <= RELATIVE_PATH_MAX_BYTES
  );
}

/**
 * Checks every file parameter; a path that is also another one's folder is refused as Triton
 * does; a path the file system cannot take fails the load as Triton's poll does.
 */
function checkOverrideFiles(
  name: string,
  files: ReadonlyMap<string, Uint8Array>,
  log: OverrideLog,
): Map<string, string[]> {
  const paths = new Map<string, string[]>();
  for (const key of files.keys()) {
    const segments = overrideFilePath(key);
    if (!fitsFileSystem(segments)) {
      log(`failed to write override files of model '${name}': file parameter '${echo(key)}' names a path longer than the file system takes`);
      throw pollFailure(name);
    }
    paths.set(key, segments);
  }
  const fileSet = new Set([...paths.values()].map((s) => s.join('/')));
  for (const [key, segments] of paths) {
    for (let i = 1; i < segments.length; i++) {
      if (fileSet.has(segments.slice(0, i).join('/'))) throw invalidFile(key, ', directory has been created as a file');
    }
  }
  return paths;
}

/**
 * Writes the files of a load request into a fresh folder `<tmp>/nereid-override-XXXXXX/<name>/`
 * (the folder holds nothing else; the model's config comes from the request's `config`).
 * Nothing is left behind when a write fails. The caller deletes the folder with
 * `removeOverrideFolder` once no loaded version uses it.
 */
export async function writeOverrideFolder(
  name: string,
  files: ReadonlyMap<string, Uint8Array>,
  log: OverrideLog = () => undefined,
): Promise<ModelLocation> {
  const paths = checkOverrideFiles(name, files, log);
  const root = await fs.mkdtemp(path.join(os.tmpdir(), TEMP_PREFIX));
  const modelDir = path.join(root, name);
  try {
    for (const [key, segments] of paths) {
      const target = path.join(modelDir, ...segments);
      try {
        await fs.mkdir(path.dirname(target), { recursive: true });
        // 'wx': a new file only, never through a link (the folder is fresh and private: belt and braces).
        await fs.writeFile(target, files.get(key) as Uint8Array, { flag: 'wx' });
      } catch (e) {
        log(`failed to write override file '${echo(key)}' of model '${name}': ${(e as NodeJS.ErrnoException).code ?? 'write failed'}`);
        throw pollFailure(name);
      }
    }
  } catch (e) {
    await removeOverrideFolder(root);
    throw e;
  }
  return { name, repository: root, path: modelDir };
}

/** Deletes an override folder (the `repository` of its location) and everything in it. */
export async function removeOverrideFolder(root: string): Promise<void> {
  // Only folders this module made: a bug elsewhere must not turn into deleting a repository.
  if (!path.basename(root).startsWith(TEMP_PREFIX)) return;
  await fs.rm(root, { recursive: true, force: true }).catch(() => undefined);
}

/**
 * `message` with the override folder's server path taken out (`/tmp/nereid-override-ab12/m/1/x`
 * becomes `m/1/x`): backends and onnxruntime name the files they fail on, and a client must not
 * learn the server's temporary paths.
 */
export function hideOverrideFolder(message: string, root: string): string {
  return hideServerPaths(message, [{ local: root, shown: '' }]);
}
