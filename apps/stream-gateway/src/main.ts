import 'reflect-metadata';
import { logStartFailure, startHttpService } from '@restash/shared/util-http';
import { AppModule } from './app.module';
import { loadStreamGatewayConfig } from './config';

async function main(): Promise<void> {
  const config = loadStreamGatewayConfig();
  await startHttpService(AppModule.forRoot(config), config.http);
}

main().catch((error: unknown) => {
  logStartFailure('stream-gateway', error);
  process.exit(1);
});
