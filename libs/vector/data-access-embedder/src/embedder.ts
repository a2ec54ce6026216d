import { type Dispatcher, type Response, fetch } from 'undici';
/** Turns texts into vectors for the `*-data` endpoints (docs/vector.md, "Vector: embeddings"). */
export interface Embedder {
  /** The model name, reported by `info` as the index's embedding model. */
  readonly model: string;
  /**
   * One vector per text, in order: arrays of JSON numbers as the provider sent them. Their length and
   * range are the index's business (the gateway checks them as it checks a request's vectors).
   * @throws EmbedderError when the provider fails or answers something unusable (not one array of
   *   numbers per text)
   */
  embed(texts: string[]): Promise<number[][]>;
}

/**
 * The embedding provider failed; `status` is the provider's HTTP status when it answered, `refused` the
 * reason the SSRF guard refused its address (addressVerdict: `private address 10.0.0.5`), when it did.
 */
export class EmbedderError extends Error {
  constructor(
    message: string,
    readonly status?: number,
    readonly refused?: string,
  ) {
    super(message);
    this.name = 'EmbedderError';
  }
}

export interface OpenAiEmbedderOptions {
  /** Base URL, e.g. `https://api.openai.com/v1`; requests go to `<url>/embeddings`. */
  url: string;
  model: string;
  apiKey?: string;
  timeoutMs: number;
  /** The undici dispatcher requests go through, e.g. one with the SSRF guard (default: undici's global one). */
  dispatcher?: Dispatcher;
}

/** The SSRF guard's refusal of a provider address (made by {@link refusedAddress}, for guardedConnector). */
export class RefusedAddressError extends Error {
  constructor(readonly reason: string) {
    super(`refused address: ${reason}`);
    this.name = 'RefusedAddressError';
  }
}

/** The error a guarded dispatcher fails a connection to a refused provider address with (guardedConnector's `refuse`). */
export const refusedAddress = (reason: string): Error => new RefusedAddressError(reason);

/** Texts per provider request; OpenAI accepts up to 2048 inputs. */
const MAX_INPUTS = 256;

/**
 * The most bytes of a provider's answer read: 256 embeddings of 3072 dimensions (OpenAI's largest) take about
 * 16 MB of JSON. A provider an index names itself is the tenant's choice, so its answer must not make the gateway
 * hold without bound the memory every tenant shares.
 */
export const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

/** The answer's body as text, read up to `limit` bytes. @throws EmbedderError past it (the rest is not read) */
async function answerText(response: Response, limit: number): Promise<string> {
  // No status: an unusable answer, whatever the status said.
  const tooLarge = () => new EmbedderError(`embedding provider answered more than ${limit} bytes`);
  if (Number(response.headers.get('content-length') ?? 0) > limit) {
    await response.body?.cancel().catch(() => undefined);
    throw tooLarge();
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  // Leaving the loop by the throw cancels the body.
  for await (const chunk of response.body ?? []) {
    size += chunk.byteLength;
    if (size > limit) throw tooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size).toString('utf8');
}

/**
 * An OpenAI-compatible embeddings endpoint (`POST /embeddings {model, input: string[]}` answering
 * `{data: [{index, embedding}]}`): OpenAI, vLLM, TEI, Ollama and the local dev embedder all speak it.
 */
export class OpenAiEmbedder implements Embedder {
  readonly model: string;

  constructor(
    private readonly options: OpenAiEmbedderOptions,
    /** The most bytes of an answer read ({@link MAX_ANSWER_BYTES}). */
    private readonly maxAnswerBytes = MAX_ANSWER_BYTES,
  ) {
    this.model = options.model;
  }

  async embed(texts: string[]): Promise<number[][]> {
    const out: number[][] = [];
    for (let i = 0; i < texts.length; i += MAX_INPUTS) out.push(...(await this.request(texts.slice(i, i + MAX_INPUTS))));
    return out;
  }

  private async request(input: string[]): Promise<number[][]> {
    let response: Response;
    try {
      response = await fetch(`${this.options.url.replace(/\/$/, '')}/embeddings`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {}),
        },
        body: JSON.stringify({ model: this.model, input }),
        signal: AbortSignal.timeout(this.options.timeoutMs),
        ...(this.options.dispatcher ? { dispatcher: this.options.dispatcher } : {}),
      });
    } catch (error) {
      const refused = error instanceof Error && error.cause instanceof RefusedAddressError ? error.cause.reason : undefined;
      throw new EmbedderError(`embedding provider unreachable: ${(error as Error).message}${refused ? ` (${refused})` : ''}`, undefined, refused);
    }
    const text = await answerText(response, this.maxAnswerBytes);
    let body: { data?: Array<{ index: number; embedding: number[] }>; error?: { message?: string } } | undefined;
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      body = undefined;
    }
    if (!response.ok) throw new EmbedderError(`embedding provider answered ${response.status}: ${body?.error?.message ?? 'no details'}`, response.status);
    const data = body?.data;
    if (!Array.isArray(data) || data.length !== input.length || data.some((d) => !Array.isArray(d?.embedding))) {
      throw new EmbedderError('embedding provider answered without one embedding per input');
    }
    if (data.some((d) => d.embedding.some((x: unknown) => typeof x !== 'number'))) {
      throw new EmbedderError('embedding provider answered an embedding that is not an array of numbers');
    }
    return [...data].sort((a, b) => a.index - b.index).map((d) => d.embedding);
  }
}
