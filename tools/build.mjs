// Compiles apps/ and libs/ (tests excluded) to dist/ with swc, rewriting `@restash/*` aliases to
// relative requires so that `node dist/apps/<app>/src/main.js` runs with no loader.
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import swc from '@swc/core';

const require = createRequire(import.meta.url);
const { root, swcOptions } = require('./swc-options.cjs');

async function* sources(dir) {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sources(path);
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') && !entry.name.endsWith('.d.ts')) yield path;
  }
}

const options = swcOptions({ withPaths: true });
let count = 0;
for (const top of ['apps', 'libs']) {
  for await (const file of sources(join(root, top))) {
    const rel = relative(root, file);
    const out = join(root, 'dist', rel.replace(/\.ts$/, '.js'));
    const { code, map } = await swc.transformFile(file, { ...options, filename: file, sourceFileName: relative(dirname(out), file) });
    await mkdir(dirname(out), { recursive: true });
    await writeFile(out, `${code}\n//# sourceMappingURL=${out.split('/').pop()}.map\n`);
    if (map) await writeFile(`${out}.map`, map);
    count++;
  }
}
console.log(`built ${count} files into dist/`);
