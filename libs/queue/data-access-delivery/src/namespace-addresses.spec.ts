import type { V1Pod, V1Service } from '@kubernetes/client-node';
import { NamespaceAddressBook } from './namespace-addresses';

const pod = (namespace: string, name: string, ip: string, extra: { hostNetwork?: boolean; phase?: string } = {}): V1Pod => ({
  metadata: { namespace, name },
  spec: { containers: [], ...(extra.hostNetwork ? { hostNetwork: true } : {}) },
  status: { podIP: ip, podIPs: [{ ip }], phase: extra.phase ?? 'Running' },
});

const service = (namespace: string, name: string, clusterIP: string, selector: Record<string, string> | undefined, type = 'ClusterIP'): V1Service => ({
  metadata: { namespace, name },
  spec: { clusterIP, clusterIPs: [clusterIP], type, ...(selector ? { selector } : {}) },
});

/** A book with no platform namespace, `pods` set in this order. */
function bookOf(...pods: V1Pod[]): NamespaceAddressBook {
  const book = new NamespaceAddressBook(new Set());
  for (const p of pods) book.setPod(p);
  return book;
}

describe('NamespaceAddressBook', () => {
  it('admits a namespace’s own pods and selector Services, and nothing of another namespace', () => {
    const book = new NamespaceAddressBook(new Set(['restash-system']));
    book.setPod(pod('acme', 'app', '10.42.0.7'));
    book.setService(service('acme', 'app', '10.43.0.10', { app: 'web' }));
    book.setPod(pod('other', 'db', '10.42.0.9'));
    expect(book.admits('acme', '10.42.0.7')).toBe(true);
    expect(book.admits('acme', '10.43.0.10')).toBe(true);
    expect(book.admits('acme', '10.42.0.9')).toBe(false);
    expect(book.admits('other', '10.42.0.7')).toBe(false);
  });

  it('never admits a hostNetwork pod, a finished pod, a Service without a selector, an ExternalName or headless one', () => {
    const book = new NamespaceAddressBook(new Set());
    book.setPod(pod('acme', 'host', '192.168.1.5', { hostNetwork: true }));
    book.setPod(pod('acme', 'done', '10.42.0.8', { phase: 'Succeeded' }));
    book.setService(service('acme', 'manual', '10.43.0.20', undefined));
    book.setService(service('acme', 'external', '10.43.0.21', { app: 'x' }, 'ExternalName'));
    book.setService(service('acme', 'headless', 'None', { app: 'x' }));
    for (const address of ['192.168.1.5', '10.42.0.8', '10.43.0.20', '10.43.0.21', 'None']) expect(book.admits('acme', address)).toBe(false);
  });

  it('admits nothing in the platform’s namespaces', () => {
    const book = new NamespaceAddressBook(new Set(['restash-system']));
    book.setPod(pod('restash-system', 'control-redis', '10.42.0.2'));
    expect(book.admits('restash-system', '10.42.0.2')).toBe(false);
  });

  it('follows changes: an address moved to another pod or namespace, a deleted Service, a reused address', () => {
    const book = bookOf(pod('acme', 'a', '10.42.0.7'), pod('acme', 'a', '10.42.0.8'));
    expect(book.admits('acme', '10.42.0.7')).toBe(false);
    expect(book.admits('acme', '10.42.0.8')).toBe(true);
    book.remove('pod', pod('acme', 'a', ''));
    expect(book.admits('acme', '10.42.0.8')).toBe(false);
    book.setPod(pod('other', 'b', '10.42.0.8'));
    expect(book.admits('acme', '10.42.0.8')).toBe(false);
    expect(book.admits('other', '10.42.0.8')).toBe(true);
    const svc = service('acme', 's', '10.43.0.1', { app: 'a' });
    book.setService(svc);
    book.setPod(pod('acme', 'p', '10.43.0.1'));
    book.remove('service', svc);
    expect(book.admits('acme', '10.43.0.1')).toBe(true); // still the pod's
  });

  it('compares addresses in one form (IPv6 spellings, IPv4-mapped)', () => {
    const book = bookOf(pod('acme', 'v6', 'fd00:0:0::7'), pod('acme', 'v4', '10.42.0.7'));
    expect(book.admits('acme', 'fd00::7')).toBe(true);
    expect(book.admits('acme', '::ffff:10.42.0.7')).toBe(true);
    expect(book.admits('acme', 'not an address')).toBe(false);
  });
});
