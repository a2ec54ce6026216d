// `make crds`: writes deploy/crds/restash.dev_<plural>.yaml, one CustomResourceDefinition per kind,
// from the zod schemas of libs/shared/util-resources/src/kinds.ts (crd.spec.ts fails while the
// committed files differ).
//
//   SWC_NODE_PROJECT=tsconfig.base.json node -r @swc-node/register libs/shared/util-resources/src/bin/crds.ts
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { crdFileName, crdFileText } from '../crd';
import { KIND_NAMES } from '../kinds';

const dir = join(__dirname, '../../../../../deploy/crds');
mkdirSync(dir, { recursive: true });
for (const kind of KIND_NAMES) {
  writeFileSync(join(dir, crdFileName(kind)), crdFileText(kind));
  process.stdout.write(`deploy/crds/${crdFileName(kind)}\n`);
}
