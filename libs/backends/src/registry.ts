import { InferenceError } from '@nereid/protocol';
import type { Backend } from './backend';

/** Backends by their config name (`onnxruntime`, `python`, ...). */
export class BackendRegistry {
  private readonly backends = new Map<string, Backend>();

  register(backend: Backend): this {
    this.backends.set(backend.name, backend);
    return this;
  }

  has(name: string): boolean {
    return this.backends.has(name);
  }

  get(name: string): Backend {
    const b = this.backends.get(name);
    if (!b) {
      throw InferenceError.invalidArg(
        `unable to find backend '${name}': known backends are ${[...this.backends.keys()].map((n) => `'${n}'`).join(', ')}`,
      );
    }
    return b;
  }

  names(): string[] {
    return [...this.backends.keys()];
  }
}
