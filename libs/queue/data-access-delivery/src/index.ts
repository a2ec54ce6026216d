export * from './http-deliverer';
