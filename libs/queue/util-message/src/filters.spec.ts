import { type FilterSubject, matchesFilter } from './filters';
import { bulkParameters, parseCancelRequest } from './bulk-requests';
import { parseDlqPage, parseListFilter } from './list-requests';
import { QueueError } from './errors';

const subject: FilterSubject = {
  messageId: 'msg_1',
  url: 'https://api.example:8443/hooks/a?x=1',
  time: 1000,
  labels: ['l1', 'l2'],
  state: 'DELIVERED',
  topicName: 'g1',
  queueName: 'q1',
  scheduleId: 's1',
  flowControlKey: 'k1',
  callerIp: '10.0.0.1',
};
const filter = (query: string) => parseListFilter(new URLSearchParams(query));

function status(run: () => unknown): number {
  try {
    run();
  } catch (error) {
    if (error instanceof QueueError) return error.status;
    throw error;
  }
  return 200;
}

describe('list filters', () => {
  const matchIs = (query: string, matches: boolean) => expect(matchesFilter(filter(query), subject)).toBe(matches);

  it.each([
    ['', true],
    ['topicName=g0,g1&queueName=q1', true],
    ['topicName=g0&topicName=g1', true],
    ['topicName=g1&queueName=q2', false],
    ['urlGroup=g1', true],
    ...['scheduleId=s1', 'flowControlKey=k1', 'callerIp=10.0.0.1', 'label=l0,l2', 'state=delivered', 'messageId=msg_1', 'fromDate=1000&toDate=1000'].map((q) => [q, true] as const),
    ...['scheduleId=s2', 'flowControlKey=k2', 'callerIp=10.0.0.2', 'label=l3', 'state=FAILED', 'fromDate=1001', 'toDate=999', 'api=llm'].map((q) => [q, false] as const),
  ] as Array<readonly [string, boolean]>)('ORs the values of a key (repeated or comma-joined) and ANDs the keys: %j matches: %s', matchIs);

  it.each([
    ['host=api.example', true],
    ['host=api.example:8443', true],
    ['host=other.example', false],
    ['path=/hooks/a', true],
    ['path=/hooks', false],
  ])('host is the host name (or host:port) and path the path of the URL: %j matches: %s', matchIs);

  it('a subject without the field never matches a filter on it', () => {
    expect(matchesFilter(filter('topicName=g1'), { messageId: 'm', url: 'https://x.example', time: 0 })).toBe(false);
  });

  it('states: every documented one, CANCELED as CANCELLED, others 400', () => {
    expect(filter('state=canceled,IN_PROGRESS,ACTIVE').state).toEqual(['CANCELLED', 'IN_PROGRESS', 'ACTIVE']);
    expect(status(() => filter('state=DONE'))).toBe(400);
    expect(status(() => filter('responseStatus=abc'))).toBe(400);
  });

  it('bulk cancel: messageIds, else every match of the filters (count checked: a whole number from 1, else 400; not used)', () => {
    const cancel = (q: string) => parseCancelRequest(bulkParameters(new URLSearchParams(q), Buffer.alloc(0)));
    expect(cancel('messageIds=a,b&messageIds=c&label=x')).toEqual({ messageIds: ['a', 'b', 'c'] });
    expect(cancel('url=https://x.example&count=100')).toEqual({ filter: { url: ['https://x.example'] } });
    expect(cancel('count=100000')).toEqual({ filter: {} });
    expect(cancel('')).toEqual({ filter: {} });
    for (const q of ['count=0', 'count=-3', 'count=x', 'count=1.5', 'state=FAILED', 'responseStatus=500']) expect([q, status(() => cancel(q))]).toEqual([q, 400]);
  });

  it('the DLQ refuses host, path and state', () => {
    for (const q of ['host=a', 'path=/a', 'state=FAILED']) expect(status(() => parseDlqPage(new URLSearchParams(q)))).toBe(400);
    expect(parseDlqPage(new URLSearchParams('topicName=g&responseStatus=500')).filter).toEqual({ topicName: ['g'], responseStatus: [500] });
  });
});
