import {
  Condition,
  CONDITION_MESSAGE_MAX_LENGTH,
  conditionTime,
  findCondition,
  isValidConditionReason,
  setCondition,
  statusChanged,
} from './conditions';

const t0 = new Date('2026-03-01T10:00:00.123Z');
const t1 = new Date('2026-03-01T10:05:00.999Z');

describe('setCondition', () => {
  it('adds a new condition with lastTransitionTime = now (whole seconds) and the generation', () => {
    const out = setCondition(undefined, { type: 'Ready', status: 'False', reason: 'Reconciling', message: 'creating' }, 3, t0);
    expect(out).toEqual([
      { type: 'Ready', status: 'False', reason: 'Reconciling', message: 'creating', lastTransitionTime: '2026-03-01T10:00:00Z', observedGeneration: 3 },
    ]);
  });

  it('keeps lastTransitionTime when the status is unchanged, updating reason, message and generation', () => {
    const first = setCondition([], { type: 'Ready', status: 'False', reason: 'Reconciling', message: 'creating' }, 1, t0);
    const second = setCondition(first, { type: 'Ready', status: 'False', reason: 'BackendError', message: 'kafka down' }, 2, t1);
    expect(second[0]).toEqual({
      type: 'Ready',
      status: 'False',
      reason: 'BackendError',
      message: 'kafka down',
      lastTransitionTime: '2026-03-01T10:00:00Z',
      observedGeneration: 2,
    });
  });

  it('moves lastTransitionTime when the status changes', () => {
    const first = setCondition([], { type: 'Ready', status: 'False', reason: 'Reconciling', message: '' }, 1, t0);
    const second = setCondition(first, { type: 'Ready', status: 'True', reason: 'Ready', message: 'ok' }, 1, t1);
    expect(second[0].lastTransitionTime).toBe('2026-03-01T10:05:00Z');
  });

  it('leaves other conditions and their order alone, and does not modify its input', () => {
    const other: Condition = { type: 'Paused', status: 'False', reason: 'Active', message: '', lastTransitionTime: '2020-01-01T00:00:00Z' };
    const ready: Condition = { type: 'Ready', status: 'True', reason: 'Ready', message: '', lastTransitionTime: '2020-01-01T00:00:00Z' };
    const input = Object.freeze([ready, other]);
    const out = setCondition(input, { type: 'Ready', status: 'False', reason: 'Deleting', message: 'bye' }, 5, t0);
    expect(out.map((c) => c.type)).toEqual(['Ready', 'Paused']);
    expect(out[1]).toBe(other);
    expect(input[0].status).toBe('True');
    const appended = setCondition(input, { type: 'Degraded', status: 'Unknown', reason: 'Unknown', message: '' }, 5, t0);
    expect(appended.map((c) => c.type)).toEqual(['Ready', 'Paused', 'Degraded']);
  });

  it('cuts an over-long message to the metav1.Condition maximum', () => {
    const out = setCondition([], { type: 'Ready', status: 'False', reason: 'BackendError', message: 'x'.repeat(40_000) }, 1, t0);
    expect(out[0].message).toHaveLength(CONDITION_MESSAGE_MAX_LENGTH);
  });

  it('refuses a reason the API server would refuse', () => {
    for (const reason of ['', 'not ready', '1Ready', 'Ready.', 'Ready,', 'Bad-Reason']) {
      expect(() => setCondition([], { type: 'Ready', status: 'False', reason, message: '' }, 1, t0)).toThrow(TypeError);
    }
  });
});

describe('isValidConditionReason', () => {
  it('accepts the project reasons and metav1 forms, refuses the rest', () => {
    for (const reason of ['Reconciling', 'Ready', 'InvalidSpec', 'SecretNotFound', 'StorageConflict', 'BackendError', 'NotSupported', 'Deleting', 'DeleteFailed', 'A', 'a_b', 'Foo:Bar', 'A,B_']) {
      expect(isValidConditionReason(reason)).toBe(true);
    }
    for (const reason of ['', ' Ready', 'Ready ', '_Ready', 'Re ady', 'Ready:', 'R'.repeat(1025)]) {
      expect(isValidConditionReason(reason)).toBe(false);
    }
    expect(isValidConditionReason('R'.repeat(1024))).toBe(true);
  });
});

describe('conditionTime / findCondition', () => {
  it('formats metav1.Time and finds by type', () => {
    expect(conditionTime(new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 678)))).toBe('2026-01-02T03:04:05Z');
    const list = setCondition([], { type: 'Ready', status: 'True', reason: 'Ready', message: '' }, 1, t0);
    expect(findCondition(list, 'Ready')?.status).toBe('True');
    expect(findCondition(list, 'Other')).toBeUndefined();
    expect(findCondition(undefined, 'Ready')).toBeUndefined();
  });
});

describe('statusChanged', () => {
  const status = {
    observedGeneration: 2,
    secretName: 's',
    conditions: [{ type: 'Ready', status: 'True', reason: 'Ready', message: '', lastTransitionTime: '2026-03-01T10:00:00Z' }],
  };

  it('is false for an equal status, whatever the key order or absent-vs-undefined properties', () => {
    const reordered = {
      conditions: [{ lastTransitionTime: '2026-03-01T10:00:00Z', message: '', reason: 'Ready', status: 'True', type: 'Ready' }],
      secretName: 's',
      observedGeneration: 2,
      extra: undefined,
    };
    expect(statusChanged(status, reordered)).toBe(false);
    expect(statusChanged(status, structuredClone(status))).toBe(false);
    expect(statusChanged(undefined, undefined)).toBe(false);
  });

  it('is true for any difference, nested or at the top', () => {
    expect(statusChanged(status, { ...status, observedGeneration: 3 })).toBe(true);
    expect(statusChanged(status, { ...status, secretName: undefined })).toBe(true);
    expect(statusChanged(status, { ...status, conditions: [{ ...status.conditions[0], message: 'x' }] })).toBe(true);
    expect(statusChanged(status, { ...status, conditions: [] })).toBe(true);
    expect(statusChanged(status, { ...status, conditions: [...status.conditions, ...status.conditions] })).toBe(true);
    expect(statusChanged(undefined, status)).toBe(true);
    expect(statusChanged(status, null)).toBe(true);
    expect(statusChanged({ a: [1, 2] }, { a: [2, 1] })).toBe(true);
    expect(statusChanged({ a: [] }, { a: {} })).toBe(true);
    expect(statusChanged({ a: 1 }, { a: '1' })).toBe(true);
  });
});
