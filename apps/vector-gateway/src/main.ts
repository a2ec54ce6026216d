import 'reflect-metadata';
import { runHttpService } from '@restash/shared/util-http';
import { AppModule } from './app.module';
import { loadVectorGatewayConfig } from './config';

void runHttpService('vector-gateway', loadVectorGatewayConfig, (config) => AppModule.forRoot(config));
