// The operator's logger and how an error goes into a log line (split from operator.controller.ts).
import { Logger } from '@nestjs/common';
import { ApiException } from '@kubernetes/client-node';
import { kubernetesErrorMessage } from '@restash/operator/data-access-kubernetes';

export const logger = new Logger('Operator');

/**
 * An error as a log line takes it (logEvent): a Kubernetes API error in kubernetesErrorMessage's words (its status and
 * the server's message), anything else as is (its message and code, e.g. ECONNREFUSED).
 */
export const loggable = (error: unknown): unknown => (error instanceof ApiException ? kubernetesErrorMessage(error) : error);
