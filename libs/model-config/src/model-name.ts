import { escapeControlCharacters, hasControlCharacters, InferenceError } from '@nereid/protocol';

/** The longest name a directory entry can have on common file systems (NAME_MAX), in UTF-8 bytes. */
export const MAX_MODEL_NAME_BYTES = 255;

/**
 * Why `name` cannot name a model, or undefined when it can. A model name is one directory of a
 * repository: one path segment, so no separator, no `.` or `..`, no NUL or other control
 * character, at most 255 bytes. Empty names and path traversal get Triton's words.
 */
export function modelNameProblem(name: string): string | undefined {
  if (name.trim() === '') return 'Model name cannot be empty. Please enter a valid name to deploy.';
  if (hasControlCharacters(name)) {
    return `invalid model name '${escapeControlCharacters(name)}', model name must not contain control characters`;
  }
  if (name === '.' || name === '..' || name.includes('/') || name.includes('\\')) {
    return `invalid model name '${name}', model name must not contain path traversal characters`;
  }
  if (Buffer.byteLength(name, 'utf8') > MAX_MODEL_NAME_BYTES) {
    return `invalid model name, model name must not be longer than ${MAX_MODEL_NAME_BYTES} bytes`;
  }
  return undefined;
}

/**
 * Throws INVALID_ARG when `name` cannot name a model. Every way a client names a model (load,
 * unload, inference, metadata, config, statistics, trace settings) and every repository scan goes
 * through this rule, so a model name is always safe to join to a repository path.
 */
export function checkModelName(name: string): void {
  const problem = modelNameProblem(name);
  if (problem !== undefined) throw InferenceError.invalidArg(problem);
}

export function isValidModelName(name: string): boolean {
  return modelNameProblem(name) === undefined;
}
