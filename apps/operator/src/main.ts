import 'reflect-metadata';
import { logStartFailure, startWorkerService } from '@restash/shared/util-http';
import { loadOperatorConfig } from './config';
import { OperatorModule } from './operator.module';

async function main(): Promise<void> {
  const config = loadOperatorConfig();
  await startWorkerService(OperatorModule.forRoot(config), config.service);
}

main().catch((error: unknown) => {
  logStartFailure('operator', error);
  process.exit(1);
});
