"""BM25 sparse vectors of the bench/vector corpus, computed by Qdrant Edge's own Bm25 model.

    python bench/vector/bm25.py CORPUS.json OUT.json

CORPUS.json is corpus.mjs's output ({hash, corpus: [...], queries: [...]}). Every corpus sentence is
embedded as a document (term-frequency weights with BM25's k, b and avg_len; English tokenizer,
stopwords and Snowball stemmer; token ids are hashes below 2^31) and every held-out query as a query
(weight 1.0 per distinct token): the vectors qdrant-local's `qdrant/bm25` inference gives the same
texts with the same config. The IDF factor is not in the vectors: Qdrant applies it at query time
(the `idf` modifier), and the bench's exact search in JS does the same.

Writes {model, config, corpus: [[indices, values], ...], queries: [[indices, values], ...]}; the
values are float32 numbers (as Edge returns them) printed as Python floats.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import version

import qdrant_edge as qe

# Upstash's BM25 constants (k1 1.2, b 0.75, avg|D| 32: short texts); Edge's tokenizer defaults.
CONFIG = {"k": 1.2, "b": 0.75, "avg_len": 32.0}


def main() -> None:
    source, output = sys.argv[1:3]
    with open(source, encoding="utf-8") as f:
        texts = json.load(f)
    model = qe.Bm25(qe.Bm25Config(**CONFIG))

    def pair(vector: qe.SparseVector) -> list[list[float]]:
        return [list(vector.indices), list(vector.values)]

    out = {
        "model": f"qdrant-edge-py {version('qdrant-edge-py')} Bm25",
        "config": CONFIG,
        "corpus": [pair(model.embed_document(t)) for t in texts["corpus"]],
        "queries": [pair(model.embed_query(t)) for t in texts["queries"]],
    }
    with open(output, "w", encoding="utf-8") as f:
        json.dump(out, f, separators=(",", ":"))
    empty = sum(1 for indices, _ in out["corpus"] if not indices) + sum(1 for indices, _ in out["queries"] if not indices)
    sys.stderr.write(
        f"BM25 ({out['model']}, k {CONFIG['k']}, b {CONFIG['b']}, avg_len {CONFIG['avg_len']}): "
        f"{len(out['corpus'])} documents, {len(out['queries'])} queries, {empty} without a token\n"
    )


if __name__ == "__main__":
    main()
