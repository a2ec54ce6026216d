import 'reflect-metadata';
import { ConfigError } from '@restash/shared/util-config';
import { startHttpService } from '@restash/shared/util-http';
import { AppModule } from './app.module';
import { loadQueueGatewayConfig } from './config';

async function main(): Promise<void> {
  const config = loadQueueGatewayConfig();
  await startHttpService(AppModule.forRoot(config), config.http);
}

main().catch((error: unknown) => {
  process.stderr.write(`queue-gateway failed to start: ${error instanceof ConfigError ? error.message : String((error as Error)?.stack ?? error)}\n`);
  process.exit(1);
});
