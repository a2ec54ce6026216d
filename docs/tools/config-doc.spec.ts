import { readFileSync } from 'node:fs';
import { CONFIGURATION_PAGE, CONFIG_SECTIONS, configurationPage } from './config-doc';

describe('docs/configuration.md', () => {
  const page = readFileSync(CONFIGURATION_PAGE, 'utf8');

  it('has the environment tables the apps\' schemas give (run make config-doc)', () => {
    expect(page).toBe(configurationPage(page));
  });

  it('has a table for every app with an env schema', () => {
    expect(CONFIG_SECTIONS.map((s) => s.app)).toEqual(['kv-gateway', 'vector-gateway', 'stream-gateway', 'queue-gateway', 'queue-worker', 'operator']);
    for (const { app } of CONFIG_SECTIONS) expect(page).toContain(`<!-- config:${app}:start -->\n\n| variable | default | meaning |`);
  });
});
