import { type RunLogSubject, type RunMessageState, matchesWorkflowLogsFilter, parseWorkflowLogsFilter, workflowRunLog } from './workflow-logs';
import type { WorkflowRawStep } from './workflow';

const run: RunLogSubject = { runId: 'wfr_a', url: 'http://app/wf', state: 'RUN_STARTED', createdAt: 1_000, maxRetries: 3 };
const b64 = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64');
const raw = (messageId: string, body: unknown, createdAt?: number): WorkflowRawStep => ({ messageId, body: b64(body), callType: 'step', ...(createdAt ? { createdAt } : {}) });

describe('workflowRunLog', () => {
  it('shows the initial request and each recorded step as a sequential STEP_SUCCESS, and the run fields', () => {
    const log = workflowRunLog({ ...run, state: 'RUN_SUCCESS', endedAt: 5_000, result: b64('"done"'), labels: ['l1', 'l2'] }, [
      raw('msg_0', '{"order":1}', 1_100),
      raw('msg_1', { stepId: 1, stepName: 'charge', stepType: 'Run', out: '"ok"', concurrent: 1 }, 1_200),
    ], []);
    expect(log).toMatchObject({
      workflowRunId: 'wfr_a',
      workflowUrl: 'http://app/wf',
      workflowState: 'RUN_SUCCESS',
      workflowRunCreatedAt: 1_000,
      workflowRunCompletedAt: 5_000,
      workflowRunResponse: '"done"',
      labels: ['l1', 'l2'],
      label: 'l1',
    });
    expect(log.steps).toEqual([
      { type: 'sequential', steps: [{ stepId: 0, stepName: 'init', stepType: 'Initial', out: '{"order":1}', concurrent: 1, messageId: 'msg_0', callType: 'step', retries: 3, createdAt: 1_100, headers: {}, state: 'STEP_SUCCESS' }] },
      { type: 'sequential', steps: [{ stepId: 1, stepName: 'charge', stepType: 'Run', out: '"ok"', concurrent: 1, messageId: 'msg_1', callType: 'step', retries: 3, createdAt: 1_200, headers: {}, state: 'STEP_SUCCESS' }] },
    ]);
    expect(log).not.toHaveProperty('dlqId');
  });

  it('groups the branches of a Promise.all: a planned branch is STEP_PROGRESS without out until its result replaces it', () => {
    const plan = (target: number) => raw(`msg_p${target}`, { stepId: 0, stepName: `b${target}`, stepType: 'Run', concurrent: 2, targetStep: target });
    const result = (id: number) => raw(`msg_r${id}`, { stepId: id, stepName: `b${id}`, stepType: 'Run', out: `"${id}"`, concurrent: 2 });
    const log = workflowRunLog(run, [raw('msg_0', ''), plan(1), plan(2), result(2), result(1), plan(3), plan(4), result(3)], []);
    expect(log.steps.map((g) => [g.type, g.steps.map((s) => `${String(s['stepId'])}:${String(s['state'])}:${String(s['out'])}`)])).toEqual([
      ['sequential', ['0:STEP_SUCCESS:']],
      ['parallel', ['1:STEP_SUCCESS:"1"', '2:STEP_SUCCESS:"2"']],
      ['parallel', ['3:STEP_SUCCESS:"3"', '4:STEP_PROGRESS:undefined']],
    ]);
  });

  it('ends with a next group: not attempted, retrying, failed for good with its DLQ id, errors and the step name the SDK answered', () => {
    const messages: RunMessageState[] = [
      { messageId: 'msg_a', status: 'pending', retried: 0 },
      { messageId: 'msg_b', status: 'active', retried: 2 },
      { messageId: 'msg_c', status: 'failed', retried: 3, failure: { dlqId: 'dlq_c', status: 500, header: { 'upstash-error-step-name': ['charge'] }, body: 'boom', time: 9_000 } },
      { messageId: 'msg_d', status: 'cancelled', retried: 0 },
    ];
    const log = workflowRunLog({ ...run, state: 'RUN_FAILED', retryDelayExpression: '1000' }, [raw('msg_0', '')], messages);
    expect(log.dlqId).toBe('dlq_c');
    expect(log).not.toHaveProperty('failureFunction');
    expect(log.steps.at(-1)).toEqual({
      type: 'next',
      steps: [
        { messageId: 'msg_a', state: 'STEP_PROGRESS', retries: 3, retryDelay: '1000' },
        { messageId: 'msg_b', state: 'STEP_RETRY', retries: 3, retryDelay: '1000' },
        {
          messageId: 'msg_c',
          state: 'STEP_FAILED',
          retries: 3,
          retryDelay: '1000',
          stepName: 'charge',
          errors: [{ error: 'the workflow answered 500', body: 'boom', headers: { 'upstash-error-step-name': ['charge'] }, status: 500, time: 9_000 }],
        },
      ],
    });
  });

  it('shows the failure function of a failed run: its message, state and the failure it was called with', () => {
    const callback = { messageId: 'msg_c_fcb', url: 'http://app/wf', state: 'CALLBACK_SUCCESS' as const };
    const failure = { dlqId: 'dlq_c', status: 500, header: { 'Upstash-Error-Step-Name': ['charge'] }, body: 'boom', time: 9_000, callback };
    const log = workflowRunLog({ ...run, state: 'RUN_FAILED' }, [raw('msg_0', '')], [{ messageId: 'msg_c', status: 'failed', retried: 0, failure }]);
    expect(log.failureFunction).toEqual({ ...callback, failHeaders: failure.header, failStatus: 500, failResponse: 'boom', dlqId: 'dlq_c' });
    expect(log.steps.at(-1)?.steps[0]).toMatchObject({ stepName: 'charge', state: 'STEP_FAILED' });
  });

  it('shows cancelled messages as STEP_CANCELED only for a cancelled run, and no next group when nothing is open', () => {
    const cancelled: RunMessageState[] = [{ messageId: 'msg_d', status: 'cancelled', retried: 0 }];
    expect(workflowRunLog({ ...run, state: 'RUN_CANCELED' }, [raw('msg_0', '')], cancelled).steps.at(-1)).toEqual({ type: 'next', steps: [{ messageId: 'msg_d', state: 'STEP_CANCELED', retries: 3 }] });
    expect(workflowRunLog(run, [raw('msg_0', '')], cancelled).steps.map((g) => g.type)).toEqual(['sequential']);
  });

  it('shows a step body that is not a JSON object as an unknown step, and names the invoker', () => {
    const log = workflowRunLog({ ...run, invoker: { runId: 'wfr_p', url: 'http://app/parent', createdAt: 500 } }, [raw('msg_0', ''), raw('msg_1', 'not json')], []);
    expect(log.steps[1]?.steps[0]).toMatchObject({ stepName: 'unknown', stepType: 'unknown', out: 'not json', createdAt: 1_000 });
    expect(log.invoker).toEqual({ workflowRunId: 'wfr_p', workflowUrl: 'http://app/parent', workflowRunCreatedAt: 500 });
  });
});

describe('parseWorkflowLogsFilter', () => {
  const matches = (query: string, subject: Partial<RunLogSubject> = {}) => matchesWorkflowLogsFilter(parseWorkflowLogsFilter(new URLSearchParams(query)), { ...run, ...subject });

  it('matches runs by id, state, URL, host, path, label, flow-control key and creation time', () => {
    expect(matches('groupBy=workflowRunId')).toBe(true);
    expect(matches('workflowRunId=wfr_a')).toBe(true);
    expect(matches('workflowRunId=wfr_b')).toBe(false);
    expect(matches('state=RUN_FAILED,RUN_STARTED')).toBe(true);
    expect(matches('state=run_success')).toBe(false);
    expect(matches('workflowUrl=http://app/other&workflowUrl=http://app/wf')).toBe(true);
    expect(matches('workflowUrl=http://app/other')).toBe(false);
    expect(matches('host=app&path=/wf')).toBe(true);
    expect(matches('path=/other')).toBe(false);
    expect(matches('label=a', { labels: ['b', 'a'] })).toBe(true);
    expect(matches('label=a')).toBe(false);
    expect(matches('flowControlKey=k', { flowControlKey: 'k' })).toBe(true);
    expect(matches('flowControlKey=k')).toBe(false);
    expect(matches('fromDate=1000&toDate=1000')).toBe(true);
    expect(matches('fromDate=1001')).toBe(false);
    expect(matches('workflowCreatedAt=1000')).toBe(true);
    expect(matches('workflowCreatedAt=999')).toBe(false);
    expect(parseWorkflowLogsFilter(new URLSearchParams('messageId=msg_x'))).toMatchObject({ messageId: 'msg_x' });
  });

  it('refuses malformed values, naming the parameter', () => {
    expect(() => parseWorkflowLogsFilter(new URLSearchParams('state=DONE'))).toThrow(/invalid state: "DONE"/);
    expect(() => parseWorkflowLogsFilter(new URLSearchParams('workflowCreatedAt=yesterday'))).toThrow(/invalid workflowCreatedAt/);
    expect(() => parseWorkflowLogsFilter(new URLSearchParams('fromDate=-1'))).toThrow(/fromDate/);
    expect(() => parseWorkflowLogsFilter(new URLSearchParams(`workflowRunId=${encodeURIComponent('a/b')}`))).toThrow(/invalid workflowRunId/);
  });
});
