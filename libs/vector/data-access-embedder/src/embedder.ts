/** Turns texts into vectors for the `*-data` endpoints (README, "Vector: embeddings"). */
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

/** The embedding provider failed; `status` is the provider's HTTP status when it answered. */
export class EmbedderError extends Error {
  constructor(
    message: string,
    readonly status?: number,
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
}

/** Texts per provider request; OpenAI accepts up to 2048 inputs. */
const MAX_INPUTS = 256;

/**
 * An OpenAI-compatible embeddings endpoint (`POST /embeddings {model, input: string[]}` answering
 * `{data: [{index, embedding}]}`): OpenAI, vLLM, TEI, Ollama and the local dev embedder all speak it.
 */
export class OpenAiEmbedder implements Embedder {
  readonly model: string;

  constructor(private readonly options: OpenAiEmbedderOptions) {
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
      });
    } catch (error) {
      throw new EmbedderError(`embedding provider unreachable: ${(error as Error).message}`);
    }
    const body = (await response.json().catch(() => undefined)) as { data?: Array<{ index: number; embedding: number[] }>; error?: { message?: string } } | undefined;
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
