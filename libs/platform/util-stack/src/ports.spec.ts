import { DEV_PORTS, devPorts } from './ports';
import { processCpuSeconds } from './process';

describe('devPorts', () => {
  it('gives make dev its ports, each moved by its own variable', () => {
    const ports = devPorts({ RESTASH_KV_PORT: '18080', RESTASH_KAFKA_CONTROLLER_PORT: '' });
    expect(ports.kv).toBe(18080);
    expect(ports.kafkaController).toBe(9093);
    expect(ports.controlRedis).toBe(6390);
    expect(new Set(Object.values(devPorts({}))).size).toBe(Object.keys(DEV_PORTS).length);
  });

  it.each(['0', '65536', '80a', '-1', '1.5'])('refuses %s as a port, naming the variable', (value) => {
    expect(() => devPorts({ RESTASH_QDRANT_PORT: value })).toThrow(`RESTASH_QDRANT_PORT=${value} is not a port number`);
  });
});

describe('processCpuSeconds', () => {
  it("reads a process's own CPU accounting: it agrees with process.cpuUsage() to a few clock ticks", () => {
    const before = processCpuSeconds(process.pid);
    const usage = process.cpuUsage();
    const spent = () => {
      const { user, system } = process.cpuUsage(usage);
      return (user + system) / 1e6;
    };
    let spin = 0;
    while (spent() < 0.3) spin++;
    const after = processCpuSeconds(process.pid);
    expect(spin).toBeGreaterThan(0);
    expect(after - before).toBeGreaterThan(0.25);
    expect(after - before).toBeLessThan(spent() + 0.05);
  });

  it('throws for a process that does not exist', () => {
    expect(() => processCpuSeconds(2 ** 22 + 1)).toThrow();
  });
});
