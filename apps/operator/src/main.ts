import 'reflect-metadata';
import { logStartFailure, startWorkerService } from '@restash/shared/util-http';
import { loadOperatorConfig } from './config';
import { OperatorModule } from './operator.module';
import { restoreCommand } from './restore-command';

async function main(): Promise<void> {
  const config = loadOperatorConfig();
  await startWorkerService(OperatorModule.forRoot(config), config.service);
}

// `main.js restore`: the managed Redis' restore init container (the operator's image runs it).
if (process.argv[2] === 'restore') {
  void restoreCommand().then((code) => process.exit(code));
} else {
  main().catch((error: unknown) => {
    logStartFailure('operator', error);
    process.exit(1);
  });
}
