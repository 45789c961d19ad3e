/**
 * The lifecycle of a model version (Triton core: `model_lifecycle.h`):
 *
 *   LOADING ──▶ READY ──▶ UNLOADING ──▶ UNAVAILABLE ('unloaded')
 *      │
 *      └──▶ UNAVAILABLE (the reason the load failed)
 *
 * Every transition is announced as a plain, serialisable event (no functions, no live objects) so
 * that the same events can be carried between processes (the distributed mode replicates them
 * over Redis). A reload is two lifecycles side by side: the new runtime (its own `key`) goes
 * LOADING → READY while the old one is still READY, then the old one goes UNLOADING → UNAVAILABLE.
 */

/** States a version passes through; `UNKNOWN` is never emitted (it is what the index says of nothing). */
export type LifecycleState = 'LOADING' | 'READY' | 'UNLOADING' | 'UNAVAILABLE';

export interface LifecycleEvent {
  model: string;
  version: number;
  state: LifecycleState;
  /** Why a version is UNAVAILABLE ('unloaded', or the load's error); '' otherwise. */
  reason: string;
  /** The runtime the event is about (`<name>/<version>/<generation>`); absent when none was created. */
  key?: string;
}

export type LifecycleListener = (event: LifecycleEvent) => void;

/** Which transitions a version's runtime may make. */
const NEXT: Readonly<Record<LifecycleState, readonly LifecycleState[]>> = {
  LOADING: ['READY', 'UNAVAILABLE'],
  READY: ['UNLOADING'],
  UNLOADING: ['UNAVAILABLE'],
  UNAVAILABLE: ['LOADING'],
};

/** Whether a runtime in state `from` may move to `to` (a fresh runtime starts at LOADING). */
export function isTransition(from: LifecycleState | undefined, to: LifecycleState): boolean {
  if (from === undefined) return to === 'LOADING' || to === 'UNAVAILABLE';
  return NEXT[from].includes(to);
}

/**
 * The listeners of a manager's lifecycle events. A listener that throws stops nothing: its error
 * goes to `onListenerError` and the other listeners still hear the event.
 */
export class LifecycleEvents {
  private listeners: LifecycleListener[] = [];
  /** State of every runtime (by key) that has not reached UNAVAILABLE, to check transitions. */
  private readonly states = new Map<string, LifecycleState>();

  constructor(private readonly onListenerError: (error: unknown) => void = () => undefined) {}

  /** Subscribes; returns the function that unsubscribes. */
  on(listener: LifecycleListener): () => void {
    this.listeners = [...this.listeners, listener];
    return () => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    };
  }

  /** Announces a transition. Throws on a transition the state machine does not have (a bug). */
  emit(event: LifecycleEvent): void {
    if (event.key !== undefined) {
      const from = this.states.get(event.key);
      if (!isTransition(from, event.state)) {
        throw new Error(`model '${event.model}' version ${event.version} (${event.key}): no transition ${from ?? 'none'} -> ${event.state}`);
      }
      if (event.state === 'UNAVAILABLE') this.states.delete(event.key);
      else this.states.set(event.key, event.state);
    }
    const frozen: LifecycleEvent = Object.freeze({ ...event });
    for (const l of this.listeners) {
      try {
        l(frozen);
      } catch (e) {
        this.onListenerError(e);
      }
    }
  }
}
