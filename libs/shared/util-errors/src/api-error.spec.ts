import { ApiError, errorOf, rejectionOf } from './api-error';

class ShopError extends ApiError {}

describe('ApiError', () => {
  it('carries the status and message, named after its subclass; badRequest makes a 400 of the subclass', () => {
    const error = ShopError.badRequest('bad input');
    expect(error).toBeInstanceOf(ShopError);
    expect(error).toBeInstanceOf(ApiError);
    expect([error.status, error.message, error.name]).toEqual([400, 'bad input', 'ShopError']);
    expect(new ShopError(503, 'down').status).toBe(503);
  });
});

describe('rejectionOf', () => {
  it('gives the error of the expected type, and fails when the promise resolves or rejects with another', async () => {
    expect((await rejectionOf(Promise.reject(new ShopError(404, 'gone')), ShopError)).status).toBe(404);
    await expect(rejectionOf(Promise.resolve('ok'), ShopError)).rejects.toThrow('expected a ShopError, but it resolved');
    await expect(rejectionOf(Promise.reject(new Error('boom')), ShopError)).rejects.toThrow('expected a ShopError, got Error: boom');
  });
});

describe('errorOf', () => {
  it('gives the error of the expected type, and fails when the call returns or throws another', () => {
    expect(errorOf(() => { throw new ShopError(404, 'gone'); }, ShopError).status).toBe(404);
    expect(() => errorOf(() => 'ok', ShopError)).toThrow('expected a ShopError, but it returned');
    expect(() => errorOf(() => { throw new Error('boom'); }, ShopError)).toThrow('expected a ShopError, got Error: boom');
  });
});
