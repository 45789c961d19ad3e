/**
 * What a model may do to the server's models (Triton python backend's `pb_utils.load_model`,
 * `unload_model`, `is_model_ready`): the repository API's load, unload and readiness check,
 * with the same rules and errors as a client's requests (explicit mode only, once started).
 */
export interface ModelControl {
  /**
   * Loads or reloads `name`; `config` (ModelConfig JSON text, "" for none) overrides the
   * repository's config, `files` (`file:<version>/<path>` → bytes) form an override model folder.
   */
  load(name: string, config: string, files: ReadonlyMap<string, Uint8Array>): Promise<void>;
  unload(name: string, unloadDependents: boolean): Promise<void>;
  /** Whether the version (-1: the server's choice) is ready; throws for a model the server does not know. */
  isReady(name: string, version: number): boolean;
}
