import 'reflect-metadata';
import { runHttpService } from '@restash/shared/util-http';
import { AppModule } from './app.module';
import { loadKvGatewayConfig } from './config';

void runHttpService('kv-gateway', loadKvGatewayConfig, (config) => AppModule.forRoot(config));
