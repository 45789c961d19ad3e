/** Known paths and their methods, to answer 405 instead of 404 for a wrong method, as Triton does. */
const SEG = '[^/]+';
const VER = `(?:/versions/[0-9]+)?`;
const ROUTES: { re: RegExp; methods: string[] }[] = [
  { re: /^\/v2\/?$/, methods: ['GET'] },
  { re: /^\/v2\/health\/(live|ready)$/, methods: ['GET'] },
  { re: new RegExp(`^/v2/models/${SEG}${VER}$`), methods: ['GET'] },
  { re: new RegExp(`^/v2/models/${SEG}${VER}/(ready|config|stats)$`), methods: ['GET'] },
  { re: /^\/v2\/models\/stats$/, methods: ['GET'] },
  { re: new RegExp(`^/v2/models/${SEG}${VER}/(infer|generate|generate_stream)$`), methods: ['POST'] },
  { re: new RegExp(`^/v2/repository(/${SEG})?/index$`), methods: ['POST'] },
  { re: new RegExp(`^/v2/repository(/${SEG})?/models/${SEG}/(load|unload)$`), methods: ['POST'] },
  { re: /^\/v2\/logging$/, methods: ['GET', 'POST'] },
  { re: new RegExp(`^/v2(/models/${SEG})?/trace/setting$`), methods: ['GET', 'POST'] },
  { re: new RegExp(`^/v2/(system|cuda)sharedmemory(/region/${SEG})?/status$`), methods: ['GET'] },
  { re: new RegExp(`^/v2/(system|cuda)sharedmemory(/region/${SEG})?/(register|unregister)$`), methods: ['POST'] },
];

/** True when the path exists for some other method. */
export function isWrongMethod(method: string, url: string): boolean {
  const path = url.split('?')[0];
  return ROUTES.some((r) => r.re.test(path) && !r.methods.includes(method.toUpperCase()));
}
