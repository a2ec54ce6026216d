import { LanesService } from '../lanes.service';
import { MessagesService } from '../messages.service';
import { WorkflowDlq } from '../workflow-dlq';
import { WorkflowWaits } from '../workflow-waits';
import { WorkflowsService } from '../workflows.service';
import { FakeDeliveries, FakeLanes, FakeMessageStore, FakePublisher, FakeRunStore, FakeWaiterStore, RecordingObserver } from './fakes';

/** The queue API's services over fresh fakes of every port, as apps/queue-gateway wires them over the real stores. */
export function queueApi() {
  const store = new FakeMessageStore();
  const publisher = new FakePublisher(store);
  const runs = new FakeRunStore();
  const waiters = new FakeWaiterStore();
  const lanes = new FakeLanes();
  const deliveries = new FakeDeliveries();
  const observer = new RecordingObserver();
  const messages = new MessagesService({ store, publisher, observer });
  const workflowDeps = { runs, waiters, messages, observer };
  return {
    store,
    publisher,
    runs,
    waiters,
    lanes,
    deliveries,
    observer,
    messages,
    workflows: new WorkflowsService(workflowDeps),
    waits: new WorkflowWaits(workflowDeps),
    dlq: new WorkflowDlq(workflowDeps),
    lanesService: new LanesService({ lanes, deliveries, messages, observer }),
  };
}
