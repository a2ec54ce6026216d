import 'reflect-metadata';
import { runHttpService } from '@restash/shared/util-http';
import { AppModule } from './app.module';
import { loadQueueGatewayConfig } from './config';

void runHttpService('queue-gateway', loadQueueGatewayConfig, (config) => AppModule.forRoot(config));
