"""Qdrant REST vectors (collection config, point vectors, queries, prefetch, fusion, BM25) -> Qdrant Edge objects.

A collection has either one unnamed dense vector (name "", today's collections) or named vectors:
dense ones (`vectors: {name: {size, distance}}`) and sparse ones (`sparse_vectors: {name: {modifier}}`).
Every function raises BadRequest with a message naming the offending part of the request; the texts
follow Qdrant's ("Wrong input: ...", "Validation error in JSON body: [...]") where Qdrant has one.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

import qdrant_edge as qe

import filters as F
from filters import BadRequest

DISTANCES = {"Cosine": qe.Distance.Cosine, "Euclid": qe.Distance.Euclid, "Dot": qe.Distance.Dot, "Manhattan": qe.Distance.Manhattan}
MAX_SPARSE_INDEX = 2**32 - 1  # Qdrant's DimId is a u32
BM25_MODEL = "qdrant/bm25"


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def is_document(value: Any) -> bool:
    """A Qdrant `Document` ({text, model, options?}): text to be embedded by the server."""
    return isinstance(value, dict) and "text" in value and "model" in value


def is_sparse(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"indices", "values"}


# ---------------------------------------------------------------------------- BM25 (Qdrant's `qdrant/bm25` inference)

_TOKENIZERS = {"prefix": qe.TokenizerType.Prefix, "whitespace": qe.TokenizerType.Whitespace, "word": qe.TokenizerType.Word, "multilingual": qe.TokenizerType.Multilingual}


def _members(enum: Any) -> dict[str, Any]:
    """A PyO3 enum's members by lower-case name (PyO3 enums are not iterable)."""
    return {n.lower(): getattr(enum, n) for n in dir(enum) if n[:1].isupper()}


_LANGUAGES = _members(qe.Language)
_SNOWBALL = _members(qe.SnowballLanguage)
_bm25_cache: dict[str, Any] = {}
_bm25_lock = threading.Lock()


def _bm25_config(options: dict[str, Any], where: str) -> Any:
    """Qdrant's REST `Bm25Config` (k, b, avg_len, tokenizer, language, lowercase, ascii_folding,
    stopwords, stemmer, min_token_len, max_token_len) -> qe.Bm25Config."""
    known = {"k", "b", "avg_len", "tokenizer", "language", "lowercase", "ascii_folding", "stopwords", "stemmer", "min_token_len", "max_token_len"}
    unknown = set(options) - known
    if unknown:
        raise BadRequest(f"Format error in JSON body: {where}: unknown BM25 option(s) {sorted(unknown)!r} (known: {', '.join(sorted(known))})")
    kw: dict[str, Any] = {}
    for name in ("k", "b", "avg_len"):
        if options.get(name) is not None:
            if not _is_number(options[name]):
                raise BadRequest(f"Format error in JSON body: {where}.{name} must be a number")
            kw[name] = float(options[name])
    for name in ("lowercase", "ascii_folding"):
        if options.get(name) is not None:
            if not isinstance(options[name], bool):
                raise BadRequest(f"Format error in JSON body: {where}.{name} must be a bool")
            kw[name] = options[name]
    for name in ("min_token_len", "max_token_len"):
        if options.get(name) is not None:
            v = options[name]
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise BadRequest(f"Format error in JSON body: {where}.{name} must be a non-negative integer")
            kw[name] = v
    if options.get("tokenizer") is not None:
        if options["tokenizer"] not in _TOKENIZERS:
            raise BadRequest(f"Format error in JSON body: {where}.tokenizer must be one of {', '.join(_TOKENIZERS)}")
        kw["tokenizer"] = _TOKENIZERS[options["tokenizer"]]
    language = options.get("language")
    if language is not None and not isinstance(language, str):
        raise BadRequest(f"Format error in JSON body: {where}.language must be a string")
    if language == "none":  # Qdrant's legacy spelling of "no stemmer, no stopwords"
        kw.setdefault("stemmer", qe.DisabledStemmer())
        kw.setdefault("stopwords", qe.StopwordsSet(languages=set(), custom=set()))
    elif language is not None:
        kw["language"] = language
    stopwords = options.get("stopwords")
    if stopwords is not None:
        if isinstance(stopwords, str) and stopwords in _LANGUAGES:
            kw["stopwords"] = _LANGUAGES[stopwords]
        elif isinstance(stopwords, dict) and not set(stopwords) - {"languages", "custom"}:
            langs, custom = stopwords.get("languages") or [], stopwords.get("custom") or []
            if not isinstance(langs, list) or not all(isinstance(x, str) and x in _LANGUAGES for x in langs):
                raise BadRequest(f"Format error in JSON body: {where}.stopwords.languages must be a list of languages ({', '.join(_LANGUAGES)})")
            if not isinstance(custom, list) or not all(isinstance(x, str) for x in custom):
                raise BadRequest(f"Format error in JSON body: {where}.stopwords.custom must be a list of strings")
            kw["stopwords"] = qe.StopwordsSet(languages={_LANGUAGES[x] for x in langs}, custom=set(custom))
        else:
            raise BadRequest(f"Format error in JSON body: {where}.stopwords must be a language or {{languages?, custom?}}")
    stemmer = options.get("stemmer")
    if stemmer is not None:
        if isinstance(stemmer, dict) and stemmer.get("type") == "none" and set(stemmer) == {"type"}:
            kw["stemmer"] = qe.DisabledStemmer()
        elif isinstance(stemmer, dict) and stemmer.get("type") == "snowball" and set(stemmer) == {"type", "language"} and stemmer["language"] in _SNOWBALL:
            kw["stemmer"] = qe.SnowballParams(_SNOWBALL[stemmer["language"]])
        else:
            raise BadRequest(f"Format error in JSON body: {where}.stemmer must be {{type: \"none\"}} or {{type: \"snowball\", language: one of {', '.join(_SNOWBALL)}}}")
    return qe.Bm25Config(**kw)


def bm25(options: Any, where: str) -> Any:
    """The qe.Bm25 model for a Document's `options` (cached per distinct options)."""
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise BadRequest(f"Format error in JSON body: {where} must be an object")
    key = json.dumps(options, sort_keys=True)
    model = _bm25_cache.get(key)
    if model is None:
        try:
            model = qe.Bm25(_bm25_config(options, where))
        except ValueError as e:
            raise BadRequest(f"Bad request: {where}: {e}") from None
        with _bm25_lock:
            if len(_bm25_cache) > 256:
                _bm25_cache.clear()
            _bm25_cache[key] = model
    return model


def embed(doc: dict[str, Any], as_query: bool, where: str) -> Any:
    """A Document -> qe.SparseVector, with BM25 as Qdrant's `qdrant/bm25` inference does: a point's
    document gets term-frequency weights (k, b, avg_len), a query's gets weight 1 per unique token."""
    text, model = doc.get("text"), doc.get("model")
    unknown = set(doc) - {"text", "model", "options"}
    if unknown:
        raise BadRequest(f"Format error in JSON body: {where}: unknown Document field(s) {sorted(unknown)!r}")
    if not isinstance(text, str):
        raise BadRequest(f"Format error in JSON body: {where}.text must be a string")
    if not isinstance(model, str) or model.lower() != BM25_MODEL:
        raise BadRequest(f"Wrong input: {where}.model: qdrant-local has no inference model {model!r}; only {BM25_MODEL!r} (computed locally) is available")
    m = bm25(doc.get("options"), f"{where}.options")
    return m.embed_query(text) if as_query else m.embed_document(text)


# ---------------------------------------------------------------------------- vectors


def sparse_vector(value: Any, where: str) -> Any:
    """{indices, values} -> qe.SparseVector, validated as Qdrant does (u32 indices, unique, same length)."""
    if not isinstance(value, dict) or set(value) != {"indices", "values"}:
        raise BadRequest(f"Format error in JSON body: {where} must be a sparse vector {{indices, values}}")
    indices, values = value["indices"], value["values"]
    if not isinstance(indices, list) or not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i <= MAX_SPARSE_INDEX for i in indices):
        raise BadRequest(f"Format error in JSON body: {where}.indices must be a list of integers in 0..{MAX_SPARSE_INDEX}")
    if not isinstance(values, list) or not all(_is_number(v) for v in values):
        raise BadRequest(f"Format error in JSON body: {where}.values must be a list of numbers")
    errors = []
    if len(indices) != len(values):
        errors.append(f"{where}.values: must be the same length as indices")
    if len(set(indices)) != len(indices):
        errors.append(f"{where}.indices: must be unique")
    if errors:
        raise BadRequest(f"Validation error in JSON body: [{', '.join(errors)}]")
    return qe.SparseVector(indices, [float(v) for v in values])


def sparse_out(v: Any) -> dict[str, list[Any]]:
    return {"indices": list(v.indices), "values": list(v.values)}


def vector_out(v: Any) -> Any:
    """An Edge vector as Qdrant's REST output: the unnamed vector as a list, named ones as a map
    (sparse ones as {indices, values})."""
    if isinstance(v, dict):
        if list(v) == [""]:
            return v[""]
        return {name: sparse_out(x) if isinstance(x, qe.SparseVector) else x for name, x in v.items()}
    return v


@dataclass
class Schema:
    """A collection's vectors: dense name -> (size, distance) ("" is the unnamed vector) and sparse
    name -> modifier ("idf" or None)."""

    dense: dict[str, tuple[int, str]] = field(default_factory=dict)
    sparse: dict[str, str | None] = field(default_factory=dict)

    @property
    def unnamed(self) -> bool:
        return list(self.dense) == [""] and not self.sparse

    # ---- config

    @staticmethod
    def _dense_params(value: Any, where: str) -> tuple[int, str]:
        if not isinstance(value, dict) or "size" not in value:
            raise BadRequest(f"Format error in JSON body: {where} must be {{size, distance}}")
        size, distance = value.get("size"), value.get("distance")
        if isinstance(size, bool) or not isinstance(size, int) or size < 1 or size > 65536:
            raise BadRequest(f"Validation error in JSON body: [{where}.size: must be an integer in 1..65536, got {size!r}]")
        if distance not in DISTANCES:
            raise BadRequest(f"Format error in JSON body: {where}.distance must be one of {', '.join(DISTANCES)}, got {distance!r}")
        if value.get("multivector_config") is not None:
            raise BadRequest(f"qdrant-local: {where}.multivector_config is not supported")
        return size, distance

    @classmethod
    def from_create(cls, body: dict[str, Any]) -> "Schema":
        """The `vectors` and `sparse_vectors` of a create-collection request (Qdrant's REST shapes)."""
        schema = cls()
        vectors = body.get("vectors")
        if isinstance(vectors, dict) and "size" in vectors and not isinstance(vectors.get("size"), dict):
            schema.dense[""] = cls._dense_params(vectors, "vectors")
        elif isinstance(vectors, dict):
            for name, params in vectors.items():
                schema.dense[name] = cls._dense_params(params, f"vectors.{name}" if name else "vectors")
        elif vectors is not None:
            raise BadRequest("Format error in JSON body: vectors must be {size, distance} or {name: {size, distance}}")
        sparse = body.get("sparse_vectors")
        if sparse is not None:
            if not isinstance(sparse, dict):
                raise BadRequest("Format error in JSON body: sparse_vectors must be {name: {modifier?, index?}}")
            for name, params in sparse.items():
                where = f"sparse_vectors.{name}"
                if not name:
                    raise BadRequest(f"Format error in JSON body: {where}: a sparse vector needs a non-empty name")
                if params is None:
                    params = {}
                if not isinstance(params, dict) or set(params) - {"modifier", "index"}:
                    raise BadRequest(f"Format error in JSON body: {where} must be {{modifier?, index?}}")
                modifier = params.get("modifier")
                if modifier not in (None, "none", "idf"):
                    raise BadRequest(f"Format error in JSON body: {where}.modifier must be \"none\" or \"idf\", got {modifier!r}")
                if name in schema.dense:
                    raise BadRequest(f"Wrong input: vector name `{name}` is used by a dense and a sparse vector")
                schema.sparse[name] = "idf" if modifier == "idf" else None
        if not schema.dense and not schema.sparse:
            raise BadRequest("Format error in JSON body: a collection needs vectors or sparse_vectors")
        return schema

    def edge_config(self) -> Any:
        sparse = {n: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf if m == "idf" else None) for n, m in self.sparse.items()} or None
        if self.unnamed:
            size, distance = self.dense[""]
            return qe.EdgeConfig(vectors=qe.EdgeVectorParams(size=size, distance=DISTANCES[distance]))
        dense = {n: qe.EdgeVectorParams(size=s, distance=DISTANCES[d]) for n, (s, d) in self.dense.items()} or None
        return qe.EdgeConfig(vectors=dense, sparse_vectors=sparse)

    def to_meta(self) -> dict[str, Any]:
        """The `vectors` (and `sparse_vectors`) of collection.json, also what collection info reports."""
        if self.unnamed:
            size, distance = self.dense[""]
            return {"vectors": {"size": size, "distance": distance}}
        out: dict[str, Any] = {"vectors": {n: {"size": s, "distance": d} for n, (s, d) in self.dense.items()}}
        if self.sparse:
            out["sparse_vectors"] = {n: ({"modifier": m} if m else {}) for n, m in self.sparse.items()}
        return out

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> "Schema":
        vectors = meta.get("vectors") or {}
        schema = cls()
        if isinstance(vectors.get("size"), int):
            schema.dense[""] = (vectors["size"], vectors["distance"])
        else:
            schema.dense = {n: (p["size"], p["distance"]) for n, p in vectors.items()}
        schema.sparse = {n: (p or {}).get("modifier") for n, p in (meta.get("sparse_vectors") or {}).items()}
        return schema

    # ---- data

    def check_name(self, name: str) -> None:
        """400 with Qdrant's text unless `name` is one of the collection's vectors."""
        if name not in self.dense and name not in self.sparse:
            raise BadRequest(f"Wrong input: Not existing vector name error: {name}")

    def named_vector(self, name: str, value: Any, where: str, as_query: bool) -> Any:
        """One vector for vector `name`: a dense list, a sparse {indices, values}, or a BM25 Document."""
        self.check_name(name)
        if name in self.sparse:
            if is_document(value):
                return embed(value, as_query, where)
            if isinstance(value, list):
                raise BadRequest(f"Wrong input: {where}: vector `{name}` is sparse: expected {{indices, values}}, got a dense vector")
            return sparse_vector(value, where)
        if is_document(value):
            raise BadRequest(f"Wrong input: {where}: vector `{name or '(default)'}` is dense; qdrant-local embeds documents only with {BM25_MODEL!r} into sparse vectors")
        if is_sparse(value):
            raise BadRequest(f"Wrong input: {where}: vector `{name or '(default)'}` is dense: expected a list of numbers, got a sparse vector")
        return F.vector(value, self.dense[name][0], where)

    def point_vector(self, value: Any, where: str) -> Any:
        """A point's `vector` (Qdrant's VectorStruct) -> an Edge vector (a list, or a dict of named vectors)."""
        if isinstance(value, list):
            return self.named_vector("", value, where, False)
        if isinstance(value, dict) and not is_document(value) and not is_sparse(value):
            if self.unnamed and list(value) == [""]:
                return self.named_vector("", value[""], f"{where}", False)
            return {name: self.named_vector(name, v, f"{where}.{name}", False) for name, v in value.items()}
        return self.named_vector("", value, where, False)

    def batch_vectors(self, vectors: Any, count: int) -> list[Any]:
        """`batch.vectors` (Qdrant's BatchVectorStruct): a list per point, or {name: [vector per point]}."""
        if isinstance(vectors, list):
            if len(vectors) != count:
                raise BadRequest("Format error in JSON body: batch must be {ids, vectors, payloads?} lists of equal length")
            return [self.point_vector(v, f"batch.vectors[{i}]") for i, v in enumerate(vectors)]
        if isinstance(vectors, dict):
            out: list[dict[str, Any]] = [{} for _ in range(count)]
            for name, column in vectors.items():
                if not isinstance(column, list) or len(column) != count:
                    raise BadRequest(f"Format error in JSON body: batch.vectors.{name} must be a list with one vector per id")
                for i, v in enumerate(column):
                    out[i][name] = self.named_vector(name, v, f"batch.vectors.{name}[{i}]", False)
            return [next(iter(v.values())) if self.unnamed and list(v) == [""] else v for v in out]
        raise BadRequest("Format error in JSON body: batch.vectors must be a list of vectors or {name: [vectors]}")

    def with_vector(self, value: Any, where: str = "with_vector") -> bool | list[str]:
        """`with_vector`: a bool, or a list of vector names (each must exist; Qdrant answers 400 otherwise)."""
        if value is None:
            return False
        if isinstance(value, bool):
            return value
        if isinstance(value, list) and all(isinstance(k, str) for k in value):
            if self.unnamed:  # only the default vector exists: any list that names it means "the vector"
                return bool(value)
            for name in value:
                self.check_name(name)
            return value
        raise BadRequest(f"Format error in JSON body: {where} must be a bool or a list of vector names, got {value!r}")

    # ---- queries

    def query(self, spec: Any, using: Any, where: str) -> Any:
        """`query` (Qdrant's QueryInterface): a dense list, a sparse {indices, values}, a Document,
        {nearest: ...}, {fusion: rrf|dbsf}, {rrf: {k?, weights?}}, {sample: random}, {order_by: ...}, or null."""
        if using is not None and not isinstance(using, str):
            raise BadRequest(f"Format error in JSON body: {where}using must be a string")
        name = using or ""
        at = f"{where}query"
        if spec is None:
            return None
        if isinstance(spec, list) or is_sparse(spec) or is_document(spec):
            return qe.Query.Nearest(self.named_vector(name, spec, at, True), using=name)
        if isinstance(spec, dict) and len(spec) == 1:
            ((kind, value),) = spec.items()
            if kind == "nearest":
                return qe.Query.Nearest(self.named_vector(name, value, f"{at}.nearest", True), using=name)
            if kind == "fusion":
                if value == "rrf":
                    return qe.Fusion.Rrf(k=2)  # Qdrant's default k (DEFAULT_RRF_K): score = sum 1 / (k + rank0)
                if value == "dbsf":
                    return qe.Fusion.Dbsf()
                raise BadRequest(f"Format error in JSON body: {at}.fusion must be \"rrf\" or \"dbsf\", got {value!r}")
            if kind == "rrf":
                if not isinstance(value, dict) or set(value) - {"k", "weights"}:
                    raise BadRequest(f"Format error in JSON body: {at}.rrf must be {{k?, weights?}}")
                k, weights = value.get("k"), value.get("weights")
                if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 0):
                    raise BadRequest(f"Format error in JSON body: {at}.rrf.k must be a non-negative integer")
                if weights is not None and (not isinstance(weights, list) or not all(_is_number(w) and w >= 0 for w in weights)):
                    raise BadRequest(f"Format error in JSON body: {at}.rrf.weights must be a list of non-negative numbers")
                return qe.Fusion.Rrf(k=2 if k is None else k, weights=None if weights is None else [float(w) for w in weights])
            if kind == "sample":
                if value != "random":
                    raise BadRequest(f"Format error in JSON body: {at}.sample must be \"random\"")
                return qe.Sample.Random
            if kind == "order_by":
                return F.order_by(value, f"{at}.order_by")
        raise BadRequest(f"Format error in JSON body: {at}: unsupported query {spec!r} (supported: a dense or sparse vector, a Document, nearest, fusion, rrf, sample, order_by)")

    def prefetches(self, spec: Any, where: str, depth: int = 0) -> list[Any] | None:
        """`prefetch`: one Prefetch or a list ({prefetch?, query, using?, filter?, params?, score_threshold?, limit?})."""
        if spec is None:
            return None
        items = spec if isinstance(spec, list) else [spec]
        if depth > 8:
            raise BadRequest(f"Format error in JSON body: {where}prefetch nests too deeply")
        out = []
        for i, p in enumerate(items):
            at = f"{where}prefetch[{i}]." if isinstance(spec, list) else f"{where}prefetch."
            if not isinstance(p, dict):
                raise BadRequest(f"Format error in JSON body: {at[:-1]} must be an object")
            unknown = set(p) - {"prefetch", "query", "using", "filter", "params", "score_threshold", "limit", "lookup_from"}
            if unknown:
                raise BadRequest(f"Format error in JSON body: {at[:-1]}: unknown field(s) {sorted(unknown)!r}")
            if p.get("lookup_from") is not None:
                raise BadRequest(f"qdrant-local: {at}lookup_from is not supported")
            out.append(
                qe.Prefetch(
                    limit=F.limit(p.get("limit"), 10, f"{at}limit"),
                    query=self.query(p.get("query"), p.get("using"), at),
                    prefetches=self.prefetches(p.get("prefetch"), at, depth + 1),
                    params=search_params(p.get("params"), at),
                    filter=F.parse_filter(p.get("filter"), f"{at}filter"),
                    score_threshold=score_threshold(p.get("score_threshold"), at),
                )
            )
        return out


def search_params(params: Any, where: str) -> Any:
    if params is None:
        return None
    if not isinstance(params, dict):
        raise BadRequest(f"Format error in JSON body: {where}params must be an object")
    ef = params.get("hnsw_ef")
    if ef is not None and (isinstance(ef, bool) or not isinstance(ef, int) or ef < 0):
        raise BadRequest(f"Format error in JSON body: {where}params.hnsw_ef must be a non-negative integer")
    return qe.SearchParams(hnsw_ef=ef, exact=bool(params.get("exact", False)))


def score_threshold(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if not _is_number(value):
        raise BadRequest(f"Format error in JSON body: {where}score_threshold must be a number")
    return float(value)
