import type { BackendRegistry } from '@nereid/backends';
import { InferenceError } from '@nereid/protocol';

/** What a gateway knows of a backend it does not run: its name (a config's backend is checked against it). */
interface NamedBackend {
  readonly name: string;
  readonly defaultCpuInstanceCount?: number;
}

/**
 * The backends of a gateway-only process (distributed mode): names only. Its repository manager
 * checks configs against them, and the workers of the cluster load the models; onnxruntime and
 * python are never loaded here.
 */
export function clusterBackends(names: readonly string[] = ['onnxruntime', 'python']): BackendRegistry {
  const byName = new Map<string, NamedBackend>(names.map((name) => [name, { name, defaultCpuInstanceCount: 1 }]));
  const registry = {
    has: (name: string): boolean => byName.has(name),
    get: (name: string): NamedBackend => {
      const b = byName.get(name);
      if (!b) throw InferenceError.invalidArg(`unable to find backend '${name}': known backends are ${names.map((n) => `'${n}'`).join(', ')}`);
      return b;
    },
    names: (): string[] => [...byName.keys()],
  };
  // The manager reads only has / get(name).defaultCpuInstanceCount / names; the class has private fields.
  return registry as unknown as BackendRegistry;
}
