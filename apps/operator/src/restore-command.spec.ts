import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { restoreCommand } from './restore-command';

describe('restoreCommand', () => {
  let dir: string;
  beforeEach(async () => (dir = await mkdtemp(join(tmpdir(), 'restash-restore-command-'))));
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('leaves a volume with an append-only file alone without reading its environment', async () => {
    await mkdir(join(dir, 'appendonlydir'));
    await expect(restoreCommand({ RESTORE_DIR: dir })).resolves.toBe(0);
  });

  it('fails on an empty volume without a place to restore from', async () => {
    await expect(restoreCommand({ RESTORE_DIR: dir, RESTORE_BUCKET: 'b' })).resolves.toBe(1);
  });
});
