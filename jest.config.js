/** @type {import('jest').Config} */
const swcConfig = {
  sourceMaps: true,
  module: { type: 'commonjs' },
  jsc: {
    target: 'es2022',
    parser: { syntax: 'typescript', decorators: true, dynamicImport: true },
    transform: { legacyDecorator: true, decoratorMetadata: true },
    keepClassNames: true,
  },
};

const aliases = {};
for (const lib of ['model-config', 'repository', 'tensor', 'protocol', 'scheduling', 'backends', 'transport', 'metrics', 'core']) {
  aliases[`^@nereid/${lib}$`] = `<rootDir>/libs/${lib}/src`;
}
for (const app of ['gateway', 'scheduler', 'worker']) {
  aliases[`^@nereid/${app}$`] = `<rootDir>/apps/${app}/src`;
}

module.exports = {
  rootDir: __dirname,
  testEnvironment: '<rootDir>/test/jest-environment.js',
  roots: ['<rootDir>/apps', '<rootDir>/libs', '<rootDir>/test'],
  testMatch: ['**/*.spec.ts', '**/*.e2e-spec.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest', swcConfig] },
  moduleNameMapper: aliases,
  testTimeout: 60000,
  maxWorkers: 2,
};
