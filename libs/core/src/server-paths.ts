import * as path from 'node:path';

/**
 * A server folder that messages must not show, and what they show in its place: an override
 * folder is shown as nothing (`m/1/model.onnx`), a cloud repository's local cache as the
 * repository's URL (`s3://bucket/path/m/config.pbtxt`).
 */
export interface ShownPath {
  local: string;
  shown: string;
}

/**
 * `message` with each server folder replaced by what is shown for it. Longer folders go first, so
 * a folder inside another is replaced as itself. Backends, onnxruntime and the config parser name
 * the files they fail on; a client, the repository index and the log name them as the user does.
 */
export function hideServerPaths(message: string, paths: readonly ShownPath[]): string {
  let out = message;
  for (const { local, shown } of [...paths].sort((a, b) => b.local.length - a.local.length)) {
    if (local === '') continue;
    const shownFolder = shown === '' ? '' : shown.replace(/\/+$/, '') + '/';
    out = out.split(local + path.sep).join(shownFolder);
    out = out.split(local).join(shown.replace(/\/+$/, ''));
  }
  return out;
}
