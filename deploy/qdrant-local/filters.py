"""Qdrant REST JSON (filters, ids, payload selectors, order_by, vectors, queries, prefetch, fusion,
BM25 Documents) -> Qdrant Edge objects.

Every function raises BadRequest with a message naming the offending part of the request.
"""

from __future__ import annotations

import json
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

import qdrant_edge as qe

try:  # numpy.bool_ is the one Python value Edge 0.9 extracts as a JSON bool (see match_value).
    import numpy as _np
except ImportError:  # pragma: no cover - numpy is in deploy/python/requirements.txt
    _np = None

BOOL_MATCH_UNSUPPORTED = "qdrant-local: matching booleans is not supported by Qdrant Edge 0.9"
MAX_U64 = 2**64 - 1


class BadRequest(Exception):
    """Bad input: answered with HTTP 400 and this message."""


# ---------------------------------------------------------------------------- ids


def parse_id(value: Any, where: str = "id") -> int | str:
    """A point id: an unsigned int, or a UUID string returned in canonical hyphenated form."""
    if isinstance(value, bool):
        raise BadRequest(f"Format error in JSON body: {where}: point id must be an unsigned integer or a UUID, got {value!r}")
    if isinstance(value, int):
        if 0 <= value <= MAX_U64:
            return value
        raise BadRequest(f"Format error in JSON body: {where}: point id must be an unsigned integer or a UUID, got {value}")
    if isinstance(value, str):
        try:
            return str(uuid.UUID(value))
        except ValueError:
            raise BadRequest(f"Unable to parse UUID: {value}") from None
    raise BadRequest(f"Format error in JSON body: {where}: point id must be an unsigned integer or a UUID, got {value!r}")


def id_out(value: Any) -> int | str:
    """An Edge point id as JSON: ints stay ints, UUIDs become canonical strings."""
    return value if isinstance(value, int) else str(value)


def parse_ids(values: Any, where: str) -> list[int | str]:
    if not isinstance(values, list):
        raise BadRequest(f"Format error in JSON body: {where} must be a list of point ids")
    return [parse_id(v, f"{where}[{i}]") for i, v in enumerate(values)]


# ---------------------------------------------------------------------------- selectors


def with_payload(value: Any, default: bool) -> Any:
    """`with_payload`: bool | [keys] | {"include": [..]} | {"exclude": [..]}."""
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, list) and all(isinstance(k, str) for k in value):
        return qe.PayloadSelector.Include(value)
    if isinstance(value, dict) and len(value) == 1:
        ((kind, keys),) = value.items()
        if isinstance(keys, str):
            keys = [keys]
        if isinstance(keys, list) and all(isinstance(k, str) for k in keys):
            if kind == "include":
                return qe.PayloadSelector.Include(keys)
            if kind == "exclude":
                return qe.PayloadSelector.Exclude(keys)
    raise BadRequest(f"Format error in JSON body: with_payload must be a bool, a list of keys, or {{include|exclude: [keys]}}, got {value!r}")


# ---------------------------------------------------------------------------- filters


def _bool_value(value: bool) -> Any:
    # Edge 0.9 extracts a Python bool as an integer (bool is an int subclass), so
    # MatchValue(True) matches the integer 1 and never a stored `true`. numpy.bool_ is not an int,
    # and PyO3 extracts it as a Rust bool: MatchValue(numpy.bool_(True)) matches exactly `true`.
    if _np is None:
        raise BadRequest(BOOL_MATCH_UNSUPPORTED)
    return _np.bool_(value)


def _match(key: str, spec: Any, where: str) -> Any:
    if not isinstance(spec, dict) or len(spec) != 1:
        raise BadRequest(f"Format error in JSON body: {where}.match must be an object with one of value, any, except, text, text_any, phrase, got {spec!r}")
    ((kind, value),) = spec.items()
    if kind == "value":
        if isinstance(value, bool):
            return qe.MatchValue(_bool_value(value))
        if isinstance(value, int) or isinstance(value, str):
            return qe.MatchValue(value)
        raise BadRequest(f"Format error in JSON body: {where}.match.value must be a string, integer or bool, got {value!r}")
    if kind in ("any", "except"):
        if not isinstance(value, list):
            raise BadRequest(f"Format error in JSON body: {where}.match.{kind} must be a list, got {value!r}")
        if value and all(isinstance(v, bool) for v in value):
            if kind == "except":
                raise BadRequest(BOOL_MATCH_UNSUPPORTED + f" ({where}.match.except of booleans)")
            return ("bool-any", value)
        if all(isinstance(v, str) for v in value) or all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return qe.MatchAny(value) if kind == "any" else qe.MatchExcept(value)
        raise BadRequest(f"Format error in JSON body: {where}.match.{kind} must be a list of strings or a list of integers, got {value!r}")
    if kind in ("text", "text_any", "phrase"):
        if not isinstance(value, str):
            raise BadRequest(f"Format error in JSON body: {where}.match.{kind} must be a string")
        return {"text": qe.MatchText, "text_any": qe.MatchTextAny, "phrase": qe.MatchPhrase}[kind](value)
    raise BadRequest(f"Format error in JSON body: {where}.match: unknown match kind {kind!r}")


def _range(spec: Any, where: str) -> Any:
    if not isinstance(spec, dict) or not spec or set(spec) - {"gt", "gte", "lt", "lte"}:
        raise BadRequest(f"Format error in JSON body: {where}.range must be an object with gt/gte/lt/lte, got {spec!r}")
    values = {k: v for k, v in spec.items() if v is not None}
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values.values()):
        return qe.RangeFloat(**{k: float(v) for k, v in values.items()})
    if all(isinstance(v, str) for v in values.values()):
        return qe.RangeDateTime(**values)
    raise BadRequest(f"Format error in JSON body: {where}.range bounds must be numbers or datetime strings, got {spec!r}")


def _key(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise BadRequest(f"Format error in JSON body: {where}.key must be a non-empty string")
    return value


def condition(spec: Any, where: str) -> Any:
    """One Qdrant condition (field, is_empty, is_null, has_id, nested, has_vector, or a filter)."""
    if not isinstance(spec, dict):
        raise BadRequest(f"Format error in JSON body: {where} must be a condition object, got {spec!r}")
    if "key" in spec:
        key = _key(spec["key"], where)
        rest = {k: v for k, v in spec.items() if k != "key" and v is not None}
        if set(rest) == {"match"}:
            m = _match(key, rest["match"], where)
            if isinstance(m, tuple):  # any-of booleans: a should of exact bool matches
                return qe.Filter(should=[qe.FieldCondition(key, match=qe.MatchValue(_bool_value(v))) for v in m[1]])
            return qe.FieldCondition(key, match=m)
        if set(rest) == {"range"}:
            return qe.FieldCondition(key, range=_range(rest["range"], where))
        if set(rest) == {"values_count"}:
            vc = rest["values_count"]
            if not isinstance(vc, dict) or set(vc) - {"gt", "gte", "lt", "lte"}:
                raise BadRequest(f"Format error in JSON body: {where}.values_count must be an object with gt/gte/lt/lte")
            return qe.FieldCondition(key, values_count=qe.ValuesCount(**vc))
        if set(rest) == {"is_empty"} and isinstance(rest["is_empty"], bool):
            return qe.FieldCondition(key, is_empty=rest["is_empty"])
        if set(rest) == {"is_null"} and isinstance(rest["is_null"], bool):
            return qe.FieldCondition(key, is_null=rest["is_null"])
        raise BadRequest(f"Format error in JSON body: {where}: unsupported field condition {sorted(rest)!r} (supported: match, range, values_count)")
    if len(spec) == 1:
        ((kind, value),) = spec.items()
        if kind in ("is_empty", "is_null"):
            if not isinstance(value, dict) or set(value) != {"key"}:
                raise BadRequest(f"Format error in JSON body: {where}.{kind} must be {{\"key\": ...}}")
            key = _key(value["key"], f"{where}.{kind}")
            return qe.IsEmptyCondition(key) if kind == "is_empty" else qe.IsNullCondition(key)
        if kind == "has_id":
            return qe.HasIdCondition(set(parse_ids(value, f"{where}.has_id")))
        if kind == "has_vector":
            if not isinstance(value, str):
                raise BadRequest(f"Format error in JSON body: {where}.has_vector must be a string")
            return qe.HasVectorCondition(value)
        if kind == "nested":
            if not isinstance(value, dict) or set(value) != {"key", "filter"}:
                raise BadRequest(f"Format error in JSON body: {where}.nested must be {{key, filter}}")
            return qe.NestedCondition(_key(value["key"], f"{where}.nested"), parse_filter(value["filter"], f"{where}.nested.filter"))
    if set(spec) & {"must", "should", "must_not", "min_should"}:
        return parse_filter(spec, where)
    raise BadRequest(f"Format error in JSON body: {where}: unknown condition {spec!r}")


def _conditions(value: Any, where: str) -> list[Any] | None:
    if value is None:
        return None
    if isinstance(value, dict):
        return [condition(value, where)]
    if isinstance(value, list):
        return [condition(c, f"{where}[{i}]") for i, c in enumerate(value)]
    raise BadRequest(f"Format error in JSON body: {where} must be a condition or a list of conditions")


def parse_filter(spec: Any, where: str = "filter") -> Any:
    """A Qdrant filter object -> qdrant_edge.Filter (None stays None)."""
    if spec is None:
        return None
    if not isinstance(spec, dict):
        raise BadRequest(f"Format error in JSON body: {where} must be an object, got {spec!r}")
    unknown = set(spec) - {"must", "should", "must_not", "min_should"}
    if unknown:
        raise BadRequest(f"Format error in JSON body: {where}: unknown filter clause(s) {sorted(unknown)!r} (expected must, should, must_not, min_should)")
    min_should = None
    if spec.get("min_should") is not None:
        ms = spec["min_should"]
        if not isinstance(ms, dict) or not isinstance(ms.get("min_count"), int) or not isinstance(ms.get("conditions"), list):
            raise BadRequest(f"Format error in JSON body: {where}.min_should must be {{conditions: [...], min_count: int}}")
        min_should = qe.MinShould(_conditions(ms["conditions"], f"{where}.min_should.conditions") or [], ms["min_count"])
    return qe.Filter(
        must=_conditions(spec.get("must"), f"{where}.must"),
        should=_conditions(spec.get("should"), f"{where}.should"),
        must_not=_conditions(spec.get("must_not"), f"{where}.must_not"),
        min_should=min_should,
    )


# ---------------------------------------------------------------------------- order_by / vectors / limits


def order_by(spec: Any, where: str = "order_by") -> Any:
    if isinstance(spec, str) and spec:
        return qe.OrderBy(spec)
    if isinstance(spec, dict) and isinstance(spec.get("key"), str) and not set(spec) - {"key", "direction", "start_from"}:
        direction = spec.get("direction")
        if direction not in (None, "asc", "desc"):
            raise BadRequest(f"Format error in JSON body: {where}.direction must be \"asc\" or \"desc\"")
        start = spec.get("start_from")
        if start is not None and (isinstance(start, bool) or not isinstance(start, (int, float, str))):
            raise BadRequest(f"Format error in JSON body: {where}.start_from must be a number or a datetime string")
        return qe.OrderBy(
            spec["key"],
            direction=None if direction is None else (qe.Direction.Asc if direction == "asc" else qe.Direction.Desc),
            start_from=start,
        )
    raise BadRequest(f"Format error in JSON body: {where} must be a key or {{key, direction?, start_from?}}, got {spec!r}")


def vector(value: Any, size: int, where: str) -> list[float]:
    """A dense vector: a list of `size` numbers."""
    if not isinstance(value, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value):
        raise BadRequest(f"Format error in JSON body: {where} must be a list of numbers")
    if len(value) != size:
        raise BadRequest(f"Wrong input: Vector dimension error: expected dim: {size}, got {len(value)}")
    return value


def limit(value: Any, default: int, where: str) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadRequest(f"Format error in JSON body: {where} must be a non-negative integer")
    return value


# ============================================================================ vectors
# A collection has either one unnamed dense vector (name "", the first collections) or named vectors:
# dense ones (`vectors: {name: {size, distance}}`) and sparse ones (`sparse_vectors: {name: {modifier}}`).
# Error texts follow Qdrant's ("Wrong input: ...", "Validation error in JSON body: [...]") where it has one.

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
        return vector(value, self.dense[name][0], where)

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
                return order_by(value, f"{at}.order_by")
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
                    limit=limit(p.get("limit"), 10, f"{at}limit"),
                    query=self.query(p.get("query"), p.get("using"), at),
                    prefetches=self.prefetches(p.get("prefetch"), at, depth + 1),
                    params=search_params(p.get("params"), at),
                    filter=parse_filter(p.get("filter"), f"{at}filter"),
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
