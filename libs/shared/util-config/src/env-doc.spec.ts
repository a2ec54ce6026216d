import { z } from 'zod';
import { env, httpServiceEnv } from './load-config';
import { envTable, envVariables, replaceSection } from './env-doc';

const schema = z
  .object({
    URL: env.redisUrl(),
    ...httpServiceEnv(8080, 9080),
    COUNT: env.positiveInt(3).describe('how many, at most'),
    LIST: z
      .string()
      .default('')
      .transform((v) => v.split(',')),
    FLAG: env.flag(false),
    NAME: z.string().min(1).optional(),
  })
  .transform((e) => ({ url: e.URL }));

const descriptions = {
  URL: 'the Redis',
  HOST: 'address to bind',
  PORT: 'the API',
  MANAGEMENT_PORT: 'probes | metrics',
  BODY_LIMIT_BYTES: 'largest body',
  UNREAD_ANSWER_BYTES: 'unread bytes',
  LOG_LEVEL: 'level',
  LIST: 'comma-separated',
  FLAG: 'on or off',
  NAME: 'a name',
};

describe('envVariables', () => {
  it('lists every variable in order, with its default and description, through the transform', () => {
    expect(envVariables(schema, { descriptions })).toEqual([
      { name: 'URL', fallback: '(required)', description: 'the Redis' },
      { name: 'HOST', fallback: '`0.0.0.0`', description: 'address to bind' },
      { name: 'PORT', fallback: '8080', description: 'the API' },
      { name: 'MANAGEMENT_PORT', fallback: '9080', description: 'probes | metrics' },
      { name: 'BODY_LIMIT_BYTES', fallback: '104857600', description: 'largest body' },
      { name: 'UNREAD_ANSWER_BYTES', fallback: '67108864', description: 'unread bytes' },
      { name: 'LOG_LEVEL', fallback: '`log`', description: 'level' },
      { name: 'COUNT', fallback: '3', description: 'how many, at most' },
      { name: 'LIST', fallback: '(empty)', description: 'comma-separated' },
      { name: 'FLAG', fallback: '`false`', description: 'on or off' },
      { name: 'NAME', fallback: '(none)', description: 'a name' },
    ]);
  });

  it("prefers the schema's own description, and takes defaults the loader gives", () => {
    const docs = envVariables(schema, { descriptions: { ...descriptions, COUNT: 'ignored' }, fallbacks: { URL: 'the control Redis' } });
    expect(docs.find((d) => d.name === 'COUNT')?.description).toBe('how many, at most');
    expect(docs.find((d) => d.name === 'URL')?.fallback).toBe('the control Redis');
  });

  it('refuses a variable without a description, and a fallback of no variable; other descriptions are ignored', () => {
    expect(() => envVariables(schema, { descriptions: { ...descriptions, NAME: '' } })).toThrow('variables without a description: NAME');
    expect(() => envVariables(schema, { descriptions, fallbacks: { GONE: 'x' } })).toThrow('not variables of the schema: GONE');
    expect(envVariables(schema, { descriptions: { ...descriptions, GONE: 'x' } }).map((d) => d.name)).not.toContain('GONE');
  });
});

describe('envTable', () => {
  it('writes one row per variable, pipes escaped', () => {
    expect(envTable(envVariables(schema, { descriptions }).slice(2, 4))).toBe(
      ['| variable | default | meaning |', '|---|---|---|', '| `PORT` | 8080 | the API |', '| `MANAGEMENT_PORT` | 9080 | probes \\| metrics |'].join('\n'),
    );
  });
});

describe('replaceSection', () => {
  it('replaces what stands between the markers, and nothing else', () => {
    const text = 'before\n<!-- x:start -->\nold\n<!-- x:end -->\nafter\n';
    expect(replaceSection(text, 'x', 'new')).toBe('before\n<!-- x:start -->\n\nnew\n\n<!-- x:end -->\nafter\n');
    expect(replaceSection(replaceSection(text, 'x', 'new'), 'x', 'new')).toBe(replaceSection(text, 'x', 'new'));
  });

  it('refuses a text without the markers', () => {
    expect(() => replaceSection('no markers', 'x', 'new')).toThrow('no <!-- x:start --> … <!-- x:end --> section');
  });
});
