// `make crds`: writes deploy/crds/restash.dev_<plural>.yaml, one CustomResourceDefinition per kind,
// from the zod schemas of libs/shared/util-resources/src/kinds.ts (crd.spec.ts fails while the
// committed files differ), and the same files into charts/restash/files/crds/ (the chart renders
// them; a chart test fails while they differ from deploy/crds).
//
//   SWC_NODE_PROJECT=tsconfig.base.json node -r @swc-node/register libs/shared/util-resources/src/bin/crds.ts
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { crdFileName, crdFileText } from '../crd';
import { KIND_NAMES } from '../kinds';

const root = join(__dirname, '../../../../..');
for (const dir of ['deploy/crds', 'charts/restash/files/crds']) {
  mkdirSync(join(root, dir), { recursive: true });
  for (const kind of KIND_NAMES) {
    writeFileSync(join(root, dir, crdFileName(kind)), crdFileText(kind));
    process.stdout.write(`${dir}/${crdFileName(kind)}\n`);
  }
}
