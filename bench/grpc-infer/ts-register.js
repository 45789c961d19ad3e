'use strict';
// Lets the bench run Nereid straight from the TypeScript sources: compiles .ts files with SWC on
// require and maps the @nereid/* path aliases of tsconfig.json to their folders.
const fs = require('node:fs');
const Module = require('node:module');
const path = require('node:path');
const swc = require('@swc/core');

const root = path.resolve(__dirname, '../..');
const tsconfig = JSON.parse(fs.readFileSync(path.join(root, 'tsconfig.json'), 'utf8'));
const aliases = new Map(
  Object.entries(tsconfig.compilerOptions.paths).map(([name, [target]]) => [name, path.join(root, target)]),
);

const resolve = Module._resolveFilename;
Module._resolveFilename = function resolveAlias(request, ...rest) {
  return resolve.call(this, aliases.get(request) ?? request, ...rest);
};

const swcOptions = {
  module: { type: 'commonjs' },
  sourceMaps: 'inline',
  jsc: {
    target: 'es2022',
    parser: { syntax: 'typescript', decorators: true, dynamicImport: true },
    transform: { legacyDecorator: true, decoratorMetadata: true },
    keepClassNames: true,
  },
};

require.extensions['.ts'] = (module, filename) => {
  const { code } = swc.transformSync(fs.readFileSync(filename, 'utf8'), { ...swcOptions, filename });
  module._compile(code, filename);
};
