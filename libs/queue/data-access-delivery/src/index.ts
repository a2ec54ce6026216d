export * from './http-deliverer';
export * from './namespace-addresses';
