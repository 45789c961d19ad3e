import * as fs from 'node:fs';
import * as path from 'node:path';
import { InferenceError } from '@nereid/protocol';

/**
 * The file a client names through the trace or logging extension (`trace_file`, `log_file`),
 * accepted only inside the directory the operator allowed at start-up (`flag`): a relative name
 * is taken inside it; `..`, an absolute path elsewhere, or a symbolic link anywhere on the way out
 * of it is refused. Returns the absolute path to write.
 */
export function fileUnder(dir: string, name: string, key: string, flag: string): string {
  const refuse = (why: string): never => {
    throw InferenceError.invalidArg(`'${key}' must name a file under the directory given by ${flag} ('${dir}'): ${why}`);
  };
  if (name === '' || name.includes('\0')) refuse('empty name');
  let root: string;
  try {
    root = fs.realpathSync(dir);
  } catch {
    return refuse('the directory does not exist');
  }
  const target = path.resolve(root, name);
  const rel = path.relative(root, target);
  if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) refuse(`'${name}' is outside it`);
  // The directories on the way must exist and stay inside once links are followed.
  let parent: string;
  try {
    parent = fs.realpathSync(path.dirname(target));
  } catch {
    return refuse(`the directory of '${name}' does not exist`);
  }
  const parentRel = path.relative(root, parent);
  if (parentRel.startsWith('..') || path.isAbsolute(parentRel)) refuse(`'${name}' leads outside it`);
  const stat = fs.lstatSync(target, { throwIfNoEntry: false });
  if (stat && !stat.isFile()) refuse(`'${name}' is not a regular file`);
  return path.join(parent, path.basename(target));
}
