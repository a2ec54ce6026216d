import 'reflect-metadata';
import { runWorkerService } from '@restash/shared/util-http';
import { WorkerModule } from './worker.module';
import { loadQueueWorkerConfig } from './config';

void runWorkerService('queue-worker', loadQueueWorkerConfig, (config) => WorkerModule.forRoot(config));
