import 'reflect-metadata';
import { logStartFailure, startHttpService } from '@restash/shared/util-http';
import { AppModule } from './app.module';
import { loadKvGatewayConfig } from './config';

async function main(): Promise<void> {
  const config = loadKvGatewayConfig();
  await startHttpService(AppModule.forRoot(config), config.http);
}

main().catch((error: unknown) => {
  logStartFailure('kv-gateway', error);
  process.exit(1);
});
