import 'reflect-metadata';
import { logStartFailure, startWorkerService } from '@restash/shared/util-http';
import { WorkerModule } from './worker.module';
import { loadQueueWorkerConfig } from './config';

async function main(): Promise<void> {
  const config = loadQueueWorkerConfig();
  await startWorkerService(WorkerModule.forRoot(config), config.service);
}

main().catch((error: unknown) => {
  logStartFailure('queue-worker', error);
  process.exit(1);
});
