import 'reflect-metadata';
import { runWorkerService } from '@restash/shared/util-http';
import { loadOperatorConfig } from './config';
import { OperatorModule } from './operator.module';
import { redisConfigCommand } from './redis-config-command';
import { restoreCommand } from './restore-command';

// The init containers of managed KV databases run the operator's image with a command (managed-redis.ts).
const [command, argument] = process.argv.slice(2);
if (command === 'restore') {
  void restoreCommand().then((code) => process.exit(code));
} else if (command === 'redis-config') {
  void redisConfigCommand(argument).then((code) => process.exit(code));
} else {
  void runWorkerService('operator', loadOperatorConfig, (config) => OperatorModule.forRoot(config));
}
