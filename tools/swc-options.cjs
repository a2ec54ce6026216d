// One swc configuration for the build (tools/build.mjs) and for jest (jest.preset.js), so that
// tests run exactly what ships. Path aliases come from tsconfig.base.json, never repeated.
const { readFileSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');
const tsconfig = JSON.parse(readFileSync(join(root, 'tsconfig.base.json'), 'utf8'));

/** tsconfig `paths`, the single list of `@restash/*` import aliases. */
const paths = tsconfig.compilerOptions.paths;

/** swc options: TypeScript with legacy decorators and decorator metadata (NestJS DI needs both). */
function swcOptions({ withPaths }) {
  return {
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2022',
      keepClassNames: true,
      ...(withPaths ? { baseUrl: root, paths } : {}),
    },
    module: { type: 'commonjs' },
    sourceMaps: true,
  };
}

module.exports = { root, paths, swcOptions };
