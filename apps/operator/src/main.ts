import 'reflect-metadata';
import { logStartFailure, startWorkerService } from '@restash/shared/util-http';
import { loadOperatorConfig } from './config';
import { OperatorModule } from './operator.module';
import { redisConfigCommand } from './redis-config-command';
import { restoreCommand } from './restore-command';

async function main(): Promise<void> {
  const config = loadOperatorConfig();
  await startWorkerService(OperatorModule.forRoot(config), config.service);
}

// The init containers of managed KV databases run the operator's image with a command (managed-redis.ts).
const [command, argument] = process.argv.slice(2);
if (command === 'restore') {
  void restoreCommand().then((code) => process.exit(code));
} else if (command === 'redis-config') {
  void redisConfigCommand(argument).then((code) => process.exit(code));
} else {
  main().catch((error: unknown) => {
    logStartFailure('operator', error);
    process.exit(1);
  });
}
