import 'reflect-metadata';
import { logStartFailure, startHttpService } from '@restash/shared/util-http';
import { AppModule } from './app.module';
import { loadQueueGatewayConfig } from './config';

async function main(): Promise<void> {
  const config = loadQueueGatewayConfig();
  await startHttpService(AppModule.forRoot(config), config.http);
}

main().catch((error: unknown) => {
  logStartFailure('queue-gateway', error);
  process.exit(1);
});
