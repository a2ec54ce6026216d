import 'reflect-metadata';
import { runHttpService } from '@restash/shared/util-http';
import { AppModule } from './app.module';
import { loadStreamGatewayConfig } from './config';

void runHttpService('stream-gateway', loadStreamGatewayConfig, (config) => AppModule.forRoot(config));
