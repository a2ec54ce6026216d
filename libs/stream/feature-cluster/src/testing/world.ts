import type { StreamClusterRecord } from '@restash/shared/data-access-registry';
import type { StreamLimits } from '../ports';
import { StreamSessions } from '../stream-sessions';
import { FakeControl, FakeDirectories, FakeKafka, FakePeers, FakeRegistry, RecordingObserver, clusterRecord, grant } from './fakes';

/** Short waits: the fakes answer at once. */
export const LIMITS: StreamLimits = {
  kafkaRequestTimeoutMs: 1_000,
  consumer: { idleTimeoutMs: 60_000, sessionTimeoutMs: 6_000, maxWaitMs: 100, maxBufferedRecords: 100, maxBufferedBytes: 1 << 20, joinWaitMs: 50 },
};

/** What every replica of a test shares: the registry, the brokers (one FakeKafka per broker list), the instance directory, the peers. */
export interface World {
  record: StreamClusterRecord;
  registry: FakeRegistry;
  kafka: Map<string, FakeKafka>;
  directories: FakeDirectories;
  peers: FakePeers;
}

export function world(record = clusterRecord()): World {
  return { record, registry: new FakeRegistry(record), kafka: new Map(), directories: new FakeDirectories(), peers: new FakePeers() };
}

/** A gateway replica over the world's fakes, started, reachable by the others through FakePeers under its boot id. */
export function replica(w: World, boot: string) {
  const observer = new RecordingObserver();
  const control = new FakeControl();
  const opened: string[][] = [];
  const sessions = new StreamSessions({
    openGrant: async (credentials) => {
      const record = credentials && w.registry.records.get(credentials.token);
      if (!record) throw new Error('denied');
      return grant(record);
    },
    registry: w.registry,
    kafka: (brokers) => {
      opened.push(brokers);
      const key = brokers.join(',');
      let kafka = w.kafka.get(key);
      if (!kafka) w.kafka.set(key, (kafka = new FakeKafka()));
      return kafka;
    },
    openDirectory: (id, leaseMs) => w.directories.open(id, leaseMs),
    peers: w.peers,
    control,
    observer,
    limits: LIMITS,
    boot,
  });
  sessions.start();
  w.peers.replicas.set(boot, sessions.consumers);
  return { sessions, observer, control, opened, session: () => sessions.authenticate({ token: w.record.id }) };
}
