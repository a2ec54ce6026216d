import 'reflect-metadata';
import { ConfigError } from '@restash/shared/util-config';
import { startWorkerService } from '@restash/shared/util-http';
import { WorkerModule } from './worker.module';
import { loadQueueWorkerConfig } from './config';

async function main(): Promise<void> {
  const config = loadQueueWorkerConfig();
  await startWorkerService(WorkerModule.forRoot(config), config.service);
}

main().catch((error: unknown) => {
  process.stderr.write(`queue-worker failed to start: ${error instanceof ConfigError ? error.message : String((error as Error)?.stack ?? error)}\n`);
  process.exit(1);
});
