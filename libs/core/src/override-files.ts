import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { MAX_MODEL_NAME_BYTES } from '@nereid/model-config';
import { hasControlCharacters, InferenceError } from '@nereid/protocol';
import type { ModelLocation } from '@nereid/repository';

/** Prefix of the load parameters that carry a file of an override model folder. */
const FILE_PARAMETER_PREFIX = 'file:';

const TEMP_PREFIX = 'nereid-override-';

function invalidFile(key: string, why: string): InferenceError {
  return InferenceError.invalidArg(`Invalid file parameter '${key}'${why}`);
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
    segments.some((s) => s === '' || s === '.' || Buffer.byteLength(s, 'utf8') > MAX_MODEL_NAME_BYTES);
  if (malformed) throw invalidFile(key, " must name a file of the model directory: 'file:<version>/<path>'");
  return segments;
}

/** Checks every file parameter; a path that is also another one's folder is refused as Triton does. */
function checkOverrideFiles(files: ReadonlyMap<string, Uint8Array>): Map<string, string[]> {
  const paths = new Map<string, string[]>();
  for (const key of files.keys()) paths.set(key, overrideFilePath(key));
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
export async function writeOverrideFolder(name: string, files: ReadonlyMap<string, Uint8Array>): Promise<ModelLocation> {
  const paths = checkOverrideFiles(files);
  const root = await fs.mkdtemp(path.join(os.tmpdir(), TEMP_PREFIX));
  const modelDir = path.join(root, name);
  try {
    for (const [key, segments] of paths) {
      const target = path.join(modelDir, ...segments);
      try {
        await fs.mkdir(path.dirname(target), { recursive: true });
        await fs.writeFile(target, files.get(key) as Uint8Array);
      } catch (e) {
        throw invalidFile(key, ` could not be written: ${(e as NodeJS.ErrnoException).code ?? 'write failed'}`);
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
  let out = message;
  for (const prefix of [root + path.sep, root]) out = out.split(prefix).join('');
  return out;
}
