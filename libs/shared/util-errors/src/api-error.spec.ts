import { ApiError } from './api-error';

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
