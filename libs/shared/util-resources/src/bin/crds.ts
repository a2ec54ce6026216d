// `make crds`: writes deploy/crds/restash.dev_<plural>.yaml, one CustomResourceDefinition per kind (CRD_KINDS),
// from the zod schemas of libs/shared/util-resources/src/kinds.ts (crd.spec.ts fails while the
// committed files differ), and the same files into charts/restash/files/crds/ (the chart renders
// them; a chart test fails while they differ from deploy/crds).
//
//   SWC_NODE_PROJECT=tsconfig.base.json node -r @swc-node/register libs/shared/util-resources/src/bin/crds.ts
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { crdFileName, crdFileText } from '../crd';
import { CRD_KINDS } from '../kinds';

const root = join(__dirname, '../../../../..');
for (const dir of ['deploy/crds', 'charts/restash/files/crds']) {
  mkdirSync(join(root, dir), { recursive: true });
  for (const info of CRD_KINDS) {
    writeFileSync(join(root, dir, crdFileName(info)), crdFileText(info));
    process.stdout.write(`${dir}/${crdFileName(info)}\n`);
  }
}
