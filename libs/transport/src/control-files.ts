/**
 * How a load's override files (`file:<version>/<path>` → content) travel in a ControlMessage: as
 * base64 strings in its JSON header (a load is rare, and its files are model files, not tensors).
 */
export function controlFilesToWire(files: ReadonlyMap<string, Uint8Array> | undefined): Array<[string, string]> | undefined {
  return files && [...files].map(([name, bytes]) => [name, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64')]);
}

export function controlFilesFromWire(files: ReadonlyArray<readonly [string, string]> | undefined): Map<string, Uint8Array> | undefined {
  return files && new Map(files.map(([name, base64]) => [name, new Uint8Array(Buffer.from(base64, 'base64'))]));
}
