// Shared by the load.mjs of the timed benchmarks (bench/kv, bench/stream, bench/vector; docs/benchmarks.md):
// the closed loop that keeps a number of requests in flight for a number of seconds.

/**
 * A closed loop (docs/benchmarks.md): `concurrency` workers, each calling `send(n)` (n counts the requests
 * started, from 0) and sending the next as soon as it settles, until `seconds` have passed. The time of each
 * request that resolved goes into `latencies` (ms); a rejection goes to `fail(error)`.
 * @returns the seconds from the start to the end of the last request
 */
export async function closedLoop({ seconds, concurrency, send, latencies, fail }) {
  let next = 0;
  let stop = false;
  setTimeout(() => (stop = true), seconds * 1000);
  const started = performance.now();
  const worker = async () => {
    while (!stop) {
      const n = next++;
      const t = performance.now();
      try {
        await send(n);
        latencies.push(performance.now() - t);
      } catch (error) {
        fail(error);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return (performance.now() - started) / 1000;
}
