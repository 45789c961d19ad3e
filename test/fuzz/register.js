/**
 * Loads the project's TypeScript in a plain node process or worker thread (the coverage-guided
 * fuzzer's workers run outside jest): `.ts` files are compiled on require with SWC, with the same
 * options as jest.config.js, and `@nereid/<lib>` resolves to libs/<lib>/src (apps/<app>/src).
 * Source maps are inline, so stack traces and coverage offsets refer to the compiled text of each file.
 * Compiled text is cached under .tmp/fuzz/swc-cache (keyed by the source and the options): every
 * fuzz worker loads the same files, and a run restarts workers.
 */
'use strict';
const fs = require('node:fs');
const Module = require('node:module');
const path = require('node:path');
const { createHash } = require('node:crypto');
const swc = require('@swc/core');

const root = path.resolve(__dirname, '../..');
const LIBS = ['model-config', 'repository', 'tensor', 'protocol', 'scheduling', 'backends', 'transport', 'metrics', 'core'];
const APPS = ['gateway', 'scheduler', 'worker'];
const aliases = new Map([
  ...LIBS.map((l) => [`@nereid/${l}`, path.join(root, 'libs', l, 'src')]),
  ...APPS.map((a) => [`@nereid/${a}`, path.join(root, 'apps', a, 'src')]),
]);

const cacheDir = path.join(root, '.tmp', 'fuzz', 'swc-cache');

const options = {
  sourceMaps: 'inline',
  module: { type: 'commonjs' },
  jsc: {
    target: 'es2022',
    parser: { syntax: 'typescript', decorators: true, dynamicImport: true },
    transform: { legacyDecorator: true, decoratorMetadata: true },
    keepClassNames: true,
  },
};

if (!Module._extensions['.ts']) {
  const key = createHash('sha1').update(JSON.stringify(options)).update(swc.version).digest('hex');
  Module._extensions['.ts'] = function compileTs(module, filename) {
    const source = fs.readFileSync(filename, 'utf8');
    const cached = path.join(cacheDir, `${createHash('sha1').update(key).update(filename).update(source).digest('hex')}.js`);
    let code;
    try {
      code = fs.readFileSync(cached, 'utf8');
    } catch {
      code = swc.transformSync(source, { ...options, filename }).code;
      fs.mkdirSync(cacheDir, { recursive: true });
      // Written whole under a unique name, then renamed: a concurrent reader sees all or nothing.
      const temporary = `${cached}.${process.pid}.${Math.random().toString(36).slice(2)}`;
      fs.writeFileSync(temporary, code);
      fs.renameSync(temporary, cached);
    }
    module._compile(code, filename);
  };
  const resolve = Module._resolveFilename;
  Module._resolveFilename = function resolveAlias(request, ...rest) {
    const target = aliases.get(request);
    return resolve.call(this, target ?? request, ...rest);
  };
}
