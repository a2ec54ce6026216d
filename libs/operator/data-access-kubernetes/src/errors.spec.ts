import { ApiException } from '@kubernetes/client-node';
import { apiStatusCode, isConflict, isNotFound, kubernetesErrorMessage } from './errors';

describe('Kubernetes API errors', () => {
  const conflict = new ApiException(409, 'Unsuccessful HTTP Request', { kind: 'Status', message: 'Operation cannot be fulfilled on leases "x": the object has been modified' }, { 'content-type': 'application/json' });

  it('reads the status of an ApiException and of a failed watch', () => {
    expect(apiStatusCode(conflict)).toBe(409);
    expect(isConflict(conflict)).toBe(true);
    expect(isNotFound(conflict)).toBe(false);
    expect(isNotFound(Object.assign(new Error('Not Found'), { statusCode: 404 }))).toBe(true);
    expect(apiStatusCode(new Error('ECONNREFUSED'))).toBeUndefined();
    expect(apiStatusCode(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }))).toBeUndefined();
  });

  it('describes a failure in one line, with the API server message', () => {
    expect(kubernetesErrorMessage(conflict)).toBe('409: Operation cannot be fulfilled on leases "x": the object has been modified');
    expect(kubernetesErrorMessage(new ApiException(500, 'x', 'plain text', {}))).toBe('500: plain text');
    expect(kubernetesErrorMessage(new Error('connect ECONNREFUSED'))).toBe('connect ECONNREFUSED');
  });
});
