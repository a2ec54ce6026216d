import 'reflect-metadata';
import { ConfigError } from '@restash/shared/util-config';
import { startWorkerService } from '@restash/shared/util-http';
import { loadOperatorConfig } from './config';
import { OperatorModule } from './operator.module';

async function main(): Promise<void> {
  const config = loadOperatorConfig();
  await startWorkerService(OperatorModule.forRoot(config), config.service);
}

main().catch((error: unknown) => {
  process.stderr.write(`operator failed to start: ${error instanceof ConfigError ? error.message : String((error as Error)?.stack ?? error)}\n`);
  process.exit(1);
});
