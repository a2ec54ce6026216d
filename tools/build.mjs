// Per-app production build: `nx run <app>:build` (or `node tools/build.mjs [app…]`, every app when
// none is named) compiles one app's dependency closure with swc into dist/apps/<app>/:
//
//   dist/apps/<app>/main.js          the entry: `node dist/apps/<app>/main.js` starts the app
//   dist/apps/<app>/package.json     the npm packages the compiled code requires, at the versions of
//                                    the root package.json (`npm install` there makes it runnable)
//   dist/apps/<app>/apps/…, libs/…   the compiled files, in the repository's layout, with the
//                                    `@restash/*` aliases rewritten to relative requires
//
// The closure comes from Nx's project graph, file by file: the app's production files, the projects
// their static and dynamic imports reach, their production files, and so on. Implicit dependencies
// (queue-gateway's end-to-end tests start queue-worker) are not imports and are not followed.
// Production files are the `.ts` files of a project except `*.spec.ts`, `*.d.ts` and anything under
// a `testing/` folder. The build fails (exit 1, nothing replaced) when production code imports a
// test-only project (tag `type:testing`), a file that is not production code, or an npm package
// that is not in the root package.json's `dependencies`.
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { createRequire, isBuiltin } from 'node:module';
import { dirname, join, posix } from 'node:path';
import swc from '@swc/core';
import { createProjectGraphAsync } from '@nx/devkit';
import { readFileMapCache } from 'nx/src/project-graph/nx-deps-cache.js';

const require = createRequire(import.meta.url);
const { root, swcOptions } = require('./swc-options.cjs');
const rootPackage = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const TEST_ONLY_TAG = 'type:testing';

/** A production file: TypeScript source that ships (no spec, no declaration, no `testing/` folder). */
function isProduction(file) {
  return file.endsWith('.ts') && !file.endsWith('.spec.ts') && !file.endsWith('.d.ts') && !file.split('/').includes('testing');
}

/** The project a file dependency points at (a project name or `npm:<package>`), or undefined. */
function dependencyTarget(dep) {
  if (typeof dep === 'string') return dep;
  const [target, type] = dep.length === 2 ? dep : dep.slice(1);
  return type === 'implicit' ? undefined : target;
}

/**
 * The projects an app's production code reaches, the app first.
 * @throws Error naming each production file that imports a test-only project.
 */
function closure(app, graph, projectFileMap) {
  const projects = [app];
  const errors = [];
  for (let i = 0; i < projects.length; i++) {
    for (const { file, deps = [] } of projectFileMap[projects[i]] ?? []) {
      if (!isProduction(file)) continue;
      for (const target of deps.map(dependencyTarget)) {
        const node = target && graph.nodes[target];
        if (!node) continue; // npm packages: taken from the compiled requires below
        if (node.data.tags?.includes(TEST_ONLY_TAG)) errors.push(`${file} imports the test-only project ${target}`);
        else if (!projects.includes(target)) projects.push(target);
      }
    }
  }
  if (errors.length) throw new Error(errors.join('\n'));
  return projects;
}

/** `name` of a bare specifier: `@scope/name/sub` → `@scope/name`, `name/sub` → `name`. */
function packageName(specifier) {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/**
 * Builds one app into dist/apps/<app>/ (built in a temporary folder, swapped in when complete).
 * @returns the number of compiled files and the npm packages of the app's package.json
 * @throws Error when production code imports test code, a file outside the closure, or a package
 *   missing from the root package.json's `dependencies`
 */
async function build(app, graph, projectFileMap) {
  const outDir = join(root, 'dist', 'apps', app);
  const tmpDir = `${outDir}.tmp-${process.pid}`;
  try {
    return await buildInto(tmpDir, outDir, app, graph, projectFileMap);
  } finally {
    await rm(tmpDir, { recursive: true, force: true });
  }
}

/** {@link build}'s work: compiles and checks into `tmpDir`, then replaces `outDir` with it. */
async function buildInto(tmpDir, outDir, app, graph, projectFileMap) {
  const projects = closure(app, graph, projectFileMap);
  const files = projects.flatMap((project) => projectFileMap[project].map(({ file }) => file).filter(isProduction));

  const options = swcOptions({ withPaths: true });
  const built = new Set(files.map((file) => file.replace(/\.ts$/, '.js')));
  const imported = new Set();
  const errors = [];
  await Promise.all(
    files.map(async (file) => {
      const rel = file.replace(/\.ts$/, '.js');
      const out = join(tmpDir, rel);
      const source = join(root, file);
      const { code, map } = await swc.transformFile(source, { ...options, filename: source, sourceFileName: posix.relative(posix.dirname(join('dist/apps', app, rel)), file) });
      for (const [, specifier] of code.matchAll(/\brequire\("([^"]+)"\)/g)) {
        if (specifier.startsWith('.')) {
          const target = posix.normalize(posix.join(posix.dirname(rel), specifier));
          if (![target, `${target}.js`, `${target}/index.js`].some((candidate) => built.has(candidate))) {
            errors.push(`${file} imports ${specifier}, which is not production code of ${app}'s closure`);
          }
        } else if (!isBuiltin(specifier)) imported.add(packageName(specifier));
      }
      await mkdir(dirname(out), { recursive: true });
      await writeFile(out, `${code}\n//# sourceMappingURL=${posix.basename(out)}.map\n`);
      if (map) await writeFile(`${out}.map`, map);
    }),
  );

  const dependencies = {};
  for (const name of [...imported].sort()) {
    const version = rootPackage.dependencies?.[name];
    if (version) dependencies[name] = version;
    else errors.push(`${app} requires the npm package ${name}, which is not in the root package.json's dependencies`);
  }
  // Peers of those packages that the root package.json pins (rxjs for @nestjs/*): npm would install
  // them anyway, this keeps them at the tested versions.
  for (const name of Object.keys(dependencies)) {
    const { peerDependencies = {} } = JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8'));
    for (const peer of Object.keys(peerDependencies)) if (rootPackage.dependencies?.[peer]) dependencies[peer] ??= rootPackage.dependencies[peer];
  }
  if (errors.length) throw new Error(errors.sort().join('\n'));

  const main = `${graph.nodes[app].data.sourceRoot ?? `${graph.nodes[app].data.root}/src`}/main.js`;
  if (!built.has(main)) throw new Error(`${app} has no ${main.replace(/\.js$/, '.ts')}`);
  await writeFile(join(tmpDir, 'main.js'), `// ${app}: built by tools/build.mjs from ${main.replace(/\.js$/, '.ts')}.\nrequire('./${main}');\n`);
  const manifest = {
    name: `@restash/${app}`,
    version: rootPackage.version,
    private: true,
    license: rootPackage.license,
    type: 'commonjs',
    main: 'main.js',
    engines: rootPackage.engines,
    scripts: { start: 'node main.js' },
    dependencies: Object.fromEntries(Object.entries(dependencies).sort(([a], [b]) => a.localeCompare(b))),
  };
  await writeFile(join(tmpDir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);

  await rm(outDir, { recursive: true, force: true });
  await rename(tmpDir, outDir);
  return { files: files.length, projects, packages: Object.keys(manifest.dependencies) };
}

const graph = await createProjectGraphAsync({ exitOnError: true });
const projectFileMap = readFileMapCache()?.fileMap.projectFileMap;
if (!projectFileMap) throw new Error('Nx wrote no file map (.nx/workspace-data/file-map.json)');
const apps = Object.values(graph.nodes).filter((node) => node.data.projectType === 'application').map((node) => node.name);
const requested = process.argv.slice(2);
for (const app of requested.filter((name) => !apps.includes(name))) {
  console.error(`${app} is not an application of this workspace (${apps.join(', ')})`);
  process.exit(1);
}
let failed = false;
for (const app of requested.length ? requested : apps.sort()) {
  try {
    const { files, projects, packages } = await build(app, graph, projectFileMap);
    console.log(`${app}: ${files} files of ${projects.length} projects, ${packages.length} npm packages → dist/apps/${app}/`);
  } catch (error) {
    console.error(`${app}: build failed\n${error.message}`);
    failed = true;
  }
}
if (failed) process.exit(1);
