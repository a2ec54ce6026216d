"""Qdrant REST JSON (filters, ids, payload selectors, order_by, dense vectors) -> Qdrant Edge objects.

Every function raises BadRequest with a message naming the offending part of the request.
"""

from __future__ import annotations

import uuid
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
