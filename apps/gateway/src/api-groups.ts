/**
 * Triton's API groups (`--http-restricted-api` / `--grpc-restricted-protocol`) and the one table
 * that puts every HTTP route and every gRPC method in its group.
 */
export const API_GROUPS = [
  'health',
  'metadata',
  'inference',
  'shared-memory',
  'model-config',
  'model-repository',
  'statistics',
  'trace',
  'logging',
] as const;

export type ApiGroup = (typeof API_GROUPS)[number];

export function isApiGroup(s: string): s is ApiGroup {
  return (API_GROUPS as readonly string[]).includes(s);
}

const SEG = '[^/]+';
const VER = '(?:/versions/[0-9]+)?';
const MODEL = `/v2/models/${SEG}${VER}`;

interface GroupRoutes {
  /** Paths (without the query), matched after each segment is percent-decoded. */
  http: RegExp[];
  /** `package.Service/Method` names. */
  grpc: string[];
}

const INFERENCE = 'inference.GRPCInferenceService';

/** Every route and method of the server, by group. */
export const API_TABLE: Record<ApiGroup, GroupRoutes> = {
  health: {
    http: [/^\/v2\/health\/(live|ready)$/, new RegExp(`^${MODEL}/ready$`)],
    grpc: [`${INFERENCE}/ServerLive`, `${INFERENCE}/ServerReady`, `${INFERENCE}/ModelReady`, 'grpc.health.v1.Health/Check', 'grpc.health.v1.Health/Watch'],
  },
  metadata: {
    http: [/^\/v2\/?$/, new RegExp(`^${MODEL}$`)],
    grpc: [`${INFERENCE}/ServerMetadata`, `${INFERENCE}/ModelMetadata`],
  },
  inference: {
    http: [new RegExp(`^${MODEL}/(infer|generate|generate_stream)$`)],
    grpc: [`${INFERENCE}/ModelInfer`, `${INFERENCE}/ModelStreamInfer`],
  },
  'shared-memory': {
    http: [new RegExp(`^/v2/(system|cuda)sharedmemory(/region/${SEG})?/(status|register|unregister)$`)],
    grpc: ['System', 'Cuda'].flatMap((k) => ['Status', 'Register', 'Unregister'].map((op) => `${INFERENCE}/${k}SharedMemory${op}`)),
  },
  'model-config': {
    http: [new RegExp(`^${MODEL}/config$`)],
    grpc: [`${INFERENCE}/ModelConfig`],
  },
  'model-repository': {
    http: [new RegExp(`^/v2/repository(/${SEG})?/index$`), new RegExp(`^/v2/repository(/${SEG})?/models/${SEG}/(load|unload)$`)],
    grpc: [`${INFERENCE}/RepositoryIndex`, `${INFERENCE}/RepositoryModelLoad`, `${INFERENCE}/RepositoryModelUnload`],
  },
  statistics: {
    // `/v2/models/stats` is every model's statistics (not the metadata of a model named "stats").
    http: [/^\/v2\/models\/stats$/, new RegExp(`^${MODEL}/stats$`)],
    grpc: [`${INFERENCE}/ModelStatistics`],
  },
  trace: {
    http: [new RegExp(`^/v2(/models/${SEG})?/trace/setting$`)],
    grpc: [`${INFERENCE}/TraceSetting`],
  },
  logging: {
    http: [/^\/v2\/logging$/],
    grpc: [`${INFERENCE}/LogSettings`],
  },
};

/** Order of the HTTP lookup: statistics before metadata, whose model segment also matches `stats`. */
const HTTP_ORDER: ApiGroup[] = ['statistics', ...API_GROUPS.filter((g) => g !== 'statistics')];

function decodeSegment(s: string): string {
  try {
    // A decoded '/' stays encoded: it is part of a name, not a separator (as the router sees it).
    return decodeURIComponent(s).replace(/\//g, '%2F');
  } catch {
    return s;
  }
}

/** The scheme and authority of an absolute-form target (`http://host/v2/...`), which the router drops too. */
const ABSOLUTE_FORM = /^[a-z][a-z0-9+.-]*:\/\/.*?\//i;

/** The group of a request target (`/v2/...?query`, or absolute-form); undefined for paths that are no route. */
export function httpGroupOf(url: string): ApiGroup | undefined {
  // The router ends the path at the query or a fragment.
  const end = url.search(/[?#]/);
  let raw = end === -1 ? url : url.slice(0, end);
  if (!raw.startsWith('/')) raw = raw.replace(ABSOLUTE_FORM, '/');
  const path = raw.includes('%') ? raw.split('/').map(decodeSegment).join('/') : raw;
  for (const group of HTTP_ORDER) {
    if (API_TABLE[group].http.some((re) => re.test(path))) return group;
  }
  return undefined;
}

const GRPC_GROUPS = new Map<string, ApiGroup>(API_GROUPS.flatMap((g) => API_TABLE[g].grpc.map((m) => [`/${m}`, g] as const)));

/** The group of a gRPC method path (`/package.Service/Method`); undefined for unknown methods. */
export function grpcGroupOf(methodPath: string): ApiGroup | undefined {
  return GRPC_GROUPS.get(methodPath);
}
