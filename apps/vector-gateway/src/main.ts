import 'reflect-metadata';
import { logStartFailure, startHttpService } from '@restash/shared/util-http';
import { AppModule } from './app.module';
import { loadVectorGatewayConfig } from './config';

async function main(): Promise<void> {
  const config = loadVectorGatewayConfig();
  await startHttpService(AppModule.forRoot(config), config.http);
}

main().catch((error: unknown) => {
  logStartFailure('vector-gateway', error);
  process.exit(1);
});
