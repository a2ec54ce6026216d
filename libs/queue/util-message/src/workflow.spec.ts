import { parsePublish } from './publish';
import {
  DEFAULT_WAIT_TIMEOUT_MS,
  isWorkflowEventId,
  isWorkflowRunId,
  parseWaitRequest,
  parseWorkflowFields,
  parseWorkflowStep,
  waitDeliveryHeaders,
  waitResultStep,
  workflowDelivery,
  workflowStepKey,
} from './workflow';
import { refusal } from './testing/bad-request';

const fields = (headers: Record<string, string>, prefix = 'upstash-', display = 'Upstash-') => parseWorkflowFields((name) => headers[name], prefix, display);

describe('workflow headers', () => {
  it('reads the run id, init flag, URL and call type, under any prefix', () => {
    expect(fields({ 'upstash-workflow-runid': 'wfr_1', 'upstash-workflow-init': 'TRUE', 'upstash-workflow-url': 'http://a/wf' })).toEqual({ runId: 'wfr_1', init: true, url: 'http://a/wf' });
    expect(fields({ 'upstash-workflow-runid': 'wfr_1', 'upstash-workflow-init': 'false', 'upstash-workflow-calltype': 'toCallback' })).toEqual({ runId: 'wfr_1', callType: 'toCallback' });
    expect(fields({ 'upstash-callback-workflow-runid': 'wfr_2', 'upstash-callback-workflow-calltype': 'fromCallback' }, 'upstash-callback-', 'Upstash-Callback-')).toEqual({ runId: 'wfr_2', callType: 'fromCallback' });
    expect(fields({})).toBeUndefined();
  });

  it('refuses a bad run id, init flag or call type, naming the header', () => {
    expect(refusal(() => fields({ 'upstash-workflow-runid': 'a/b' })).message).toContain('Upstash-Workflow-RunId');
    expect(refusal(() => fields({ 'upstash-workflow-runid': 'a|b' })).message).toContain('Upstash-Workflow-RunId');
    expect(refusal(() => fields({ 'upstash-workflow-runid': 'x'.repeat(257) })).status).toBe(400);
    expect(refusal(() => fields({ 'upstash-workflow-runid': 'wfr_1', 'upstash-workflow-init': 'yes' })).message).toContain('Upstash-Workflow-Init');
    expect(refusal(() => fields({ 'upstash-workflow-runid': 'wfr_1', 'upstash-workflow-calltype': 'other' })).message).toContain('Upstash-Workflow-CallType');
    expect(refusal(() => fields({ 'upstash-workflow-init': 'true' })).message).toContain('missing Upstash-Workflow-RunId');
    expect(refusal(() => fields({ 'upstash-callback-workflow-calltype': 'step' }, 'upstash-callback-', 'Upstash-Callback-')).message).toContain('Upstash-Callback-Workflow-RunId');
    expect(refusal(() => fields({ 'upstash-workflow-runid': 'wfr_1', 'upstash-workflow-init': 'true', 'upstash-workflow-calltype': 'toCallback' })).status).toBe(400);
  });

  it('tells run ids from event ids: an event id may hold |, neither may hold a path character', () => {
    expect(isWorkflowRunId('wfr_abc-DEF_1')).toBe(true);
    expect(isWorkflowEventId('order:1|x')).toBe(true);
    expect(isWorkflowRunId('order|x')).toBe(false);
    for (const bad of ['', 'a b', 'a/b', 'a?b', 'a#b', 'a%b', 'é']) {
      expect(isWorkflowRunId(bad)).toBe(false);
      expect(isWorkflowEventId(bad)).toBe(false);
    }
  });
});

describe('workflow steps', () => {
  it('parses a step and keys it by step id, a plan step by its target', () => {
    const step = parseWorkflowStep(Buffer.from('{"stepId":2,"stepName":"a","stepType":"Run","out":"1","concurrent":1}'));
    expect(step).toMatchObject({ stepId: 2, stepName: 'a', out: '1' });
    expect(workflowStepKey(false, step)).toBe('s2');
    expect(workflowStepKey(false, parseWorkflowStep(Buffer.from('{"stepId":0,"stepName":"a","stepType":"Run","targetStep":3}')))).toBe('p3');
    expect(workflowStepKey(true, undefined)).toBe('init');
  });

  it('refuses a body that is no step, naming what is wrong', () => {
    expect(refusal(() => parseWorkflowStep(Buffer.from('nope'))).message).toContain('JSON object');
    expect(refusal(() => parseWorkflowStep(Buffer.from('[1]'))).message).toContain('JSON object');
    expect(refusal(() => parseWorkflowStep(Buffer.from('{"stepId":-1,"stepName":"a","stepType":"Run"}'))).message).toContain('stepId');
    expect(refusal(() => parseWorkflowStep(Buffer.from('{"stepId":1.5,"stepName":"a","stepType":"Run"}'))).message).toContain('stepId');
    expect(refusal(() => parseWorkflowStep(Buffer.from('{"stepId":1,"stepName":"","stepType":"Run"}'))).message).toContain('stepName');
    expect(refusal(() => parseWorkflowStep(Buffer.from('{"stepId":1,"stepName":"a"}'))).message).toContain('stepType');
    expect(refusal(() => parseWorkflowStep(Buffer.from('{"stepId":0,"stepName":"a","stepType":"Run"}'))).message).toContain('targetStep');
  });

  it('refuses a step message whose body is no step when published, and takes any body for a first message', () => {
    const input = { nowMs: 1, callerIp: '::1', retries: { default: 3, max: 5 }, destination: 'http://a/wf' };
    const step = (body: string, extra: Record<string, string> = {}) => parsePublish({ ...input, headers: { 'upstash-workflow-runid': 'wfr_1', ...extra }, body: Buffer.from(body) });
    expect(refusal(() => step('free text')).message).toContain('invalid workflow step');
    expect(step('free text', { 'upstash-workflow-init': 'true' }).message.workflow).toEqual({ runId: 'wfr_1', init: true });
    expect(step('anything', { 'upstash-workflow-calltype': 'toCallback' }).message.workflow?.callType).toBe('toCallback');
    expect(refusal(() => step('{}', { 'upstash-workflow-init': 'true', 'upstash-workflow-url': 'ftp://x' })).message).toContain('Upstash-Workflow-Url');
    const withCallback = parsePublish({ ...input, headers: { 'upstash-callback': 'http://a/wf', 'upstash-callback-workflow-runid': 'wfr_9', 'upstash-callback-workflow-calltype': 'fromCallback' }, body: Buffer.alloc(0) });
    expect(withCallback.message.callbackSettings?.workflow).toEqual({ runId: 'wfr_9', callType: 'fromCallback' });
  });
});

describe('workflow deliveries', () => {
  const message: { header: Record<string, string[]>; body: string } = { header: { "Content-Type": ["application/json"] }, body: Buffer.from('{"stepId":1}').toString("base64") };

  it('carries the run id, URL and creation time, and for a step the steps so far', () => {
    const steps = [{ messageId: 'msg_1', body: 'e30=', callType: 'step' as const }];
    const delivered = workflowDelivery({ ...message, workflow: { runId: 'wfr_1', url: 'http://a/wf', createdAt: 5 } }, steps.map((s) => JSON.stringify(s)), 7);
    expect(delivered.header).toEqual({ 'Content-Type': ['application/json'], 'Upstash-Workflow-RunId': ['wfr_1'], 'Upstash-Workflow-Url': ['http://a/wf'], 'Upstash-Workflow-CreatedAt': ['7'] });
    expect(JSON.parse(Buffer.from(delivered.body, 'base64').toString())).toEqual(steps);
    // Other workflow messages keep their body; plain messages are untouched.
    expect(workflowDelivery({ ...message, workflow: { runId: 'wfr_1', createdAt: 5 } }).body).toBe(message.body);
    expect(workflowDelivery({ ...message, workflow: { runId: 'wfr_1', createdAt: 5 } }).header['Upstash-Workflow-CreatedAt']).toEqual(['5']);
    expect(workflowDelivery(message)).toBe(message);
  });
});

describe('waits', () => {
  const step = { stepId: 3, stepName: 'w', stepType: 'Wait', concurrent: 1 };

  it('parses a wait request with its defaults', () => {
    const request = parseWaitRequest(Buffer.from(JSON.stringify({ url: 'http://a/wf', step })));
    expect(request).toEqual({ url: 'http://a/wf', timeoutUrl: 'http://a/wf', timeoutMs: DEFAULT_WAIT_TIMEOUT_MS, timeoutHeaders: {}, step });
    const full = parseWaitRequest(Buffer.from(JSON.stringify({ url: 'http://a/wf', timeout: 90, timeoutUrl: 'http://a/t', timeoutHeaders: { 'Upstash-Workflow-RunId': ['wfr_1'] }, step })));
    expect(full).toMatchObject({ timeoutMs: 90_000, timeoutUrl: 'http://a/t', timeoutHeaders: { 'upstash-workflow-runid': 'wfr_1' } });
    expect(parseWaitRequest(Buffer.from(JSON.stringify({ url: 'http://a/wf', timeout: '1d', step }))).timeoutMs).toBe(86_400_000);
  });

  it('refuses a malformed wait request, naming the field', () => {
    const wait = (body: unknown) => refusal(() => parseWaitRequest(Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)))).message;
    expect(wait('nope')).toContain('JSON object');
    expect(wait({ step })).toContain('url');
    expect(wait({ url: 'file:///x', step })).toContain('wait url');
    expect(wait({ url: 'http://a/wf', timeout: 'soon', step })).toContain('wait timeout');
    expect(wait({ url: 'http://a/wf', timeout: true, step })).toContain('timeout');
    expect(wait({ url: 'http://a/wf', timeoutHeaders: { a: [1] }, step })).toContain('timeoutHeaders');
    expect(wait({ url: 'http://a/wf' })).toContain('step');
    expect(wait({ url: 'http://a/wf', step: { stepId: 'x' } })).toContain('stepId');
  });

  it('ends a wait with the event (base64) or the timeout, and keeps only Upstash-* and Content-Type headers', () => {
    expect(JSON.parse(waitResultStep(step, Buffer.from('hi')).toString())).toEqual({ ...step, out: Buffer.from('hi').toString('base64'), waitTimeout: false });
    expect(JSON.parse(waitResultStep(step, undefined).toString())).toEqual({ ...step, waitTimeout: true });
    expect(waitDeliveryHeaders({ authorization: 'Bearer secret', 'upstash-workflow-runid': 'wfr_1', 'content-type': 'application/json', host: 'x', 'Upstash-Label': ['a', 'b'] })).toEqual({
      'upstash-workflow-runid': 'wfr_1',
      'content-type': 'application/json',
      'upstash-label': 'a, b',
    });
  });
});
