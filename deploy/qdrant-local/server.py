"""qdrant-local: a single-node server for the subset of Qdrant's REST API restash uses, over Qdrant Edge.

For dev and CI only (no Qdrant server binary is available there). See README.md.

    python server.py --host 127.0.0.1 --port 6333 --data DIR

Layout: DIR/<collection>/collection.json holds the vectors as Qdrant's REST shows them ({"vectors": {"size",
"distance"}} for the unnamed vector, or {"vectors": {name: {size, distance}}, "sparse_vectors": {name: {"modifier"?}}})
and the current shard, "shard": "shard-<n>";
DIR/<collection>/shard-<n>/ is the Edge shard. Writes go through Edge's WAL before they are answered,
so acknowledged writes survive SIGKILL. Each collection loads on its own at start: one that fails is
logged, answers 503 naming it, and can be deleted; the others serve.

Concurrency: EdgeShard is internally synchronised and releases the GIL while it queries, so reads
run in parallel without a lock of ours beyond a shared (read) hold on a per-collection RW lock.
Writes are serialised per collection (a mutex, so the optimizer can record and replay them) and
also hold the RW lock shared. Only swapping or closing a shard takes the RW lock exclusively.

HNSW: Edge builds HNSW only in optimize(), which holds the GIL for its whole run (seconds for
20k x 384-d), freezing every Python thread. So optimize runs in a child process on a copy of the
shard while this process keeps serving reads and writes on the original; writes made meanwhile
are recorded and replayed on the optimized copy, which then replaces the original.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterator
from urllib.parse import unquote, urlsplit

import orjson
import qdrant_edge as qe

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))
import filters as F  # noqa: E402
from filters import BadRequest  # noqa: E402

def dumps(value: Any) -> bytes:
    """A response body as compact JSON. orjson writes the floats of returned vectors about 20x faster
    than the standard library (0.9 ms -> 0.05 ms for 12 sparse vectors of 120 entries), the same
    shortest round-trip digits; an integer beyond 64 bits (a payload may hold one) falls back to json."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value, separators=(",", ":")).encode()


TITLE = "qdrant-local - vector search engine (Qdrant Edge)"
VERSION = "1.18.0"
SCHEMAS = {
    "keyword": qe.PayloadSchemaType.Keyword,
    "integer": qe.PayloadSchemaType.Integer,
    "float": qe.PayloadSchemaType.Float,
    "bool": qe.PayloadSchemaType.Bool,
    "geo": qe.PayloadSchemaType.Geo,
    "text": qe.PayloadSchemaType.Text,
    "datetime": qe.PayloadSchemaType.Datetime,
    "uuid": qe.PayloadSchemaType.Uuid,
}
NAME_RE = re.compile(r"^[A-Za-z0-9_\-][A-Za-z0-9_.\-]{0,254}$")
# Edge writes a payload to its WAL and reads it back with serde_json's recursion limit (128 levels,
# the WAL entry included): a payload about 124 levels deep is acknowledged and then the shard cannot
# load again. Refuse deep payloads up front, with a margin.
MAX_PAYLOAD_DEPTH = 64
OPTIMIZE_AFTER_WRITES = 1000
OPTIMIZE_AFTER_IDLE_S = 1.0
EDGE_ERRORS = (Exception,)  # Edge raises plain Exception / ValueError / TypeError for bad input


def log(msg: str) -> None:
    sys.stderr.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} qdrant-local {msg}\n")
    sys.stderr.flush()


class HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def not_found(name: str) -> HttpError:
    return HttpError(404, f"Not found: Collection `{name}` doesn't exist!")


def broken_error(name: str, reason: str) -> HttpError:
    return HttpError(503, f"Service unavailable: Collection `{name}` could not be loaded and is out of service: {reason}")


def payload_depth_ok(payload: Any) -> bool:
    """Whether objects and arrays in `payload` nest at most MAX_PAYLOAD_DEPTH deep (iterative)."""
    stack = [(payload, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_PAYLOAD_DEPTH:
            return False
        children = node.values() if isinstance(node, dict) else node
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return True


@contextmanager
def edge_call() -> Iterator[None]:
    """Errors Edge raises for a request (bad filter key, missing index, ...) become 400s."""
    try:
        yield
    except (HttpError, BadRequest):
        raise
    except (ValueError, TypeError, OverflowError) as e:
        raise BadRequest(f"Bad request: {e}") from None
    except Exception as e:  # noqa: BLE001 - Edge's own error type is plain Exception
        if type(e) is Exception and str(e).startswith("No point with id "):
            raise HttpError(404, f"Not found: {e} found") from None  # Qdrant's text for a missing point
        if type(e) is Exception:
            raise BadRequest(f"Bad request: {e}") from None
        raise


class RWLock:
    """Many readers or one writer; a waiting writer blocks new readers."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer = False
        self._waiting = 0

    @contextmanager
    def read(self) -> Iterator[None]:
        with self._cond:
            while self._writer or self._waiting:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        with self._cond:
            self._waiting += 1
            while self._writer or self._readers:
                self._cond.wait()
            self._waiting -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()


def write_json_atomic(path: Path, value: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(value, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Collection:
    def __init__(self, name: str, path: Path, schema: F.Schema, gen: int, shard: Any) -> None:
        self.name = name
        self.path = path
        self.schema = schema
        self.gen = gen
        self.shard: Any = shard
        self.rw = RWLock()
        self.write_mutex = threading.Lock()
        self.writes_since_optimize = 0
        self.last_write = 0.0
        self.replay: list[Any] | None = None  # writes made while a copy is being optimized
        self.optimize_proc: subprocess.Popen[bytes] | None = None
        self.optimize_backoff_until = 0.0
        self.deleted = False

    def shard_dir(self, gen: int | None = None) -> Path:
        return self.path / f"shard-{self.gen if gen is None else gen}"

    def meta(self) -> dict[str, Any]:
        return {**self.schema.to_meta(), "shard": f"shard-{self.gen}"}

    def read(self, fn: Callable[[Any], Any]) -> Any:
        with self.rw.read():
            if self.shard is None:
                raise not_found(self.name)
            with edge_call():
                return fn(self.shard)

    def write(self, op: Any, points: int) -> None:
        """Applies one UpdateOperation (durable in Edge's WAL when this returns)."""
        with self.write_mutex, self.rw.read():
            if self.shard is None:
                raise not_found(self.name)
            with edge_call():
                self.shard.update(op)
            if self.replay is not None:
                self.replay.append(op)
            self.writes_since_optimize += points
            self.last_write = time.monotonic()


class Store:
    def __init__(self, data: Path) -> None:
        self.data = data
        self.lock = threading.Lock()
        self.collections: dict[str, Collection] = {}
        # Collections whose shard failed to load, with the reason: they answer 503 and can be deleted.
        self.broken: dict[str, str] = {}
        self.op_ids = itertools.count()
        self.stopping = threading.Event()
        data.mkdir(parents=True, exist_ok=True)
        for path in sorted(p for p in data.iterdir() if p.is_dir()):
            meta_file = path / "collection.json"
            if not meta_file.exists():
                log(f"removing incomplete collection directory {path}")
                shutil.rmtree(path, ignore_errors=True)
                continue
            try:
                self.collections[path.name] = self.load(path, meta_file)
            except Exception as e:  # noqa: BLE001 - one collection must not keep the others from serving
                self.broken[path.name] = str(e).splitlines()[0][:500] if str(e) else type(e).__name__
                log(f"collection `{path.name}` could not be loaded; it answers 503 until deleted:\n{traceback.format_exc()}")
        broken = f", {len(self.broken)} broken: {', '.join(sorted(self.broken))}" if self.broken else ""
        log(f"loaded {len(self.collections)} collection(s) from {data}{broken}")

    @staticmethod
    def load(path: Path, meta_file: Path) -> Collection:
        meta = json.loads(meta_file.read_text())
        gen = int(meta["shard"].split("-")[1])
        for stale in path.glob("shard-*"):
            if stale.name != meta["shard"]:
                shutil.rmtree(stale, ignore_errors=True)
        shard = qe.EdgeShard.load(str(path / meta["shard"]))
        return Collection(path.name, path, F.Schema.from_meta(meta), gen, shard)

    def get(self, name: str) -> Collection:
        coll = self.collections.get(name)
        if coll is None:
            if name in self.broken:
                raise broken_error(name, self.broken[name])
            raise not_found(name)
        return coll

    def exists(self, name: str) -> bool:
        return name in self.collections or name in self.broken

    def create(self, name: str, schema: F.Schema) -> None:
        if not NAME_RE.match(name) or name in (".", ".."):
            raise BadRequest(f"Validation error in path parameters: [name: collection name {name!r} must use only letters, digits, '_', '-', '.']")
        with self.lock:
            if self.exists(name):
                raise HttpError(409, f"Wrong input: Collection `{name}` already exists!")
            path = self.data / name
            shutil.rmtree(path, ignore_errors=True)
            path.mkdir(parents=True)
            shard = qe.EdgeShard.create(str(path / "shard-0"), schema.edge_config())
            coll = Collection(name, path, schema, 0, shard)
            write_json_atomic(path / "collection.json", coll.meta())
            self.collections[name] = coll

    def delete(self, name: str) -> bool:
        with self.lock:
            coll = self.collections.pop(name, None)
            if coll is None:
                if self.broken.pop(name, None) is None:
                    return False
                shutil.rmtree(self.data / name, ignore_errors=True)
                log(f"deleted broken collection `{name}`")
                return True
            coll.deleted = True
            proc = coll.optimize_proc
            if proc is not None:
                proc.kill()
            with coll.write_mutex, coll.rw.write():
                if coll.shard is not None:
                    coll.shard.close()
                    coll.shard = None
            shutil.rmtree(coll.path, ignore_errors=True)
            return True

    def close_all(self) -> None:
        self.stopping.set()
        with self.lock:
            for coll in self.collections.values():
                proc = coll.optimize_proc
                if proc is not None:
                    proc.kill()
                with coll.write_mutex, coll.rw.write():
                    if coll.shard is not None:
                        try:
                            coll.shard.flush()
                        finally:
                            coll.shard.close()
                            coll.shard = None

    # ------------------------------------------------------------------------ optimizer

    def optimizer_loop(self) -> None:
        while not self.stopping.wait(0.2):
            now = time.monotonic()
            for coll in list(self.collections.values()):
                if (
                    coll.writes_since_optimize >= OPTIMIZE_AFTER_WRITES
                    and now - coll.last_write >= OPTIMIZE_AFTER_IDLE_S
                    and now >= coll.optimize_backoff_until
                    and not coll.deleted
                    and not self.stopping.is_set()
                ):
                    try:
                        self.optimize(coll)
                    except Exception:  # noqa: BLE001 - keep the optimizer alive
                        log(f"optimize of `{coll.name}` failed:\n{traceback.format_exc()}")
                        coll.optimize_backoff_until = time.monotonic() + 60

    def optimize(self, coll: Collection) -> None:
        started = time.monotonic()
        with coll.write_mutex:
            if coll.deleted or coll.shard is None:
                return
            old_dir, new_gen = coll.shard_dir(), coll.gen + 1
            new_dir = coll.shard_dir(new_gen)
            coll.shard.flush()
            shutil.rmtree(new_dir, ignore_errors=True)
            shutil.copytree(old_dir, new_dir)
            coll.replay = []
            counted = coll.writes_since_optimize
        new_shard = None
        try:
            proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--optimize", str(new_dir)], stdin=subprocess.DEVNULL)
            coll.optimize_proc = proc
            rc = proc.wait()
            coll.optimize_proc = None
            if rc != 0 or coll.deleted or self.stopping.is_set():
                if rc != 0 and not coll.deleted and not self.stopping.is_set():
                    log(f"optimize of `{coll.name}` exited with {rc}; retrying in 60 s")
                    coll.optimize_backoff_until = time.monotonic() + 60
                return
            new_shard = qe.EdgeShard.load(str(new_dir))
            with coll.write_mutex:
                if coll.deleted or coll.shard is None:
                    return
                for op in coll.replay or []:
                    new_shard.update(op)
                new_shard.flush()
                coll.gen = new_gen
                write_json_atomic(coll.path / "collection.json", coll.meta())  # the commit point
                with coll.rw.write():
                    old_shard, coll.shard = coll.shard, new_shard
                new_shard = None
                replayed = len(coll.replay or [])
                coll.replay = None
                coll.writes_since_optimize -= counted
            old_shard.close()
            shutil.rmtree(old_dir, ignore_errors=True)
            info = coll.shard.info() if coll.shard is not None else None
            log(
                f"optimized `{coll.name}` in {time.monotonic() - started:.1f} s "
                f"(points {info.points_count if info else '?'}, indexed {info.indexed_vectors_count if info else '?'}, "
                f"replayed {replayed} write(s))"
            )
        finally:
            if new_shard is not None:
                new_shard.close()
            with coll.write_mutex:
                if coll.gen != new_gen:  # not committed: drop the copy
                    coll.replay = None
                    if not coll.deleted:
                        shutil.rmtree(new_dir, ignore_errors=True)


# ---------------------------------------------------------------------------- request handling


def record_out(p: Any, with_vec: bool | list[str], scored: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"id": F.id_out(p.id)}
    if scored:
        out["version"] = p.version
        out["score"] = p.score
    if p.payload is not None:
        out["payload"] = p.payload
    if with_vec and p.vector is not None:
        out["vector"] = F.vector_out(p.vector)
    if p.order_value is not None:
        out["order_value"] = p.order_value
    return out


def body_dict(body: Any) -> dict[str, Any]:
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise BadRequest("Format error in JSON body: expected a JSON object")
    return body


def string_list(b: dict[str, Any], field: str, what: str) -> list[str]:
    """The body's `field`, a list of strings (`what` names them in the 400 otherwise)."""
    values = b.get(field)
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise BadRequest(f"Format error in JSON body: {field} must be a list of {what}")
    return values


class Api:
    def __init__(self, store: Store) -> None:
        self.store = store

    def op_result(self) -> dict[str, Any]:
        return {"operation_id": next(self.store.op_ids), "status": "completed"}

    def handle(self, method: str, parts: list[str], body: Any) -> Any:
        s = self.store
        if parts == ["collections"] and method == "GET":
            return {"collections": [{"name": n} for n in sorted([*s.collections, *s.broken])]}
        if len(parts) < 2 or parts[0] != "collections":
            raise HttpError(404, f"Not found: {method} /{'/'.join(parts)}")
        name, rest = parts[1], parts[2:]
        if rest == [] and method == "PUT":
            return self.create_collection(name, body_dict(body))
        if rest == [] and method == "DELETE":
            return s.delete(name)
        if rest == ["exists"] and method == "GET":
            return {"exists": s.exists(name)}
        coll = s.get(name)
        key = (method, "/".join(rest))
        b = body_dict(body)
        if key == ("GET", ""):
            return self.info(coll)
        if key == ("PUT", "index"):
            return self.create_index(coll, b)
        if method == "DELETE" and len(rest) == 2 and rest[0] == "index":
            coll.write(qe.UpdateOperation.delete_field_index(rest[1]), 0)
            return self.op_result()
        if key in (("PUT", "points"), ("POST", "points/upsert")):
            return self.upsert(coll, b)
        if key == ("POST", "points"):
            return self.retrieve(coll, b)
        if key == ("POST", "points/query"):
            req, with_vec = self.query_request(coll, b, "")
            points = coll.read(lambda sh: sh.query(req))
            return {"points": [record_out(p, with_vec, True) for p in points]}
        if key == ("POST", "points/query/batch"):
            searches = b.get("searches")
            if not isinstance(searches, list):
                raise BadRequest("Format error in JSON body: searches must be a list of query requests")
            reqs = [self.query_request(coll, body_dict(q), f"searches[{i}].") for i, q in enumerate(searches)]
            results = coll.read(lambda sh: sh.query_batch(qe.QueryBatchRequest([r for r, _ in reqs]))) if reqs else []
            return [{"points": [record_out(p, wv, True) for p in res]} for res, (_, wv) in zip(results, reqs)]
        if key == ("POST", "points/scroll"):
            return self.scroll(coll, b)
        if key == ("POST", "points/count"):
            exact = b.get("exact", True)
            req = qe.CountRequest(exact=bool(exact) if exact is not None else True, filter=F.parse_filter(b.get("filter")))
            return {"count": coll.read(lambda sh: sh.count(req))}
        if key == ("POST", "points/delete"):
            return self.delete_points(coll, b)
        if key == ("PUT", "points/vectors"):
            return self.update_vectors(coll, b)
        if key == ("POST", "points/vectors/delete"):
            names = string_list(b, "vector", "vector names")
            for n in names:
                coll.schema.check_name(n)
            return self.by_points_or_filter(coll, b, lambda ids: qe.UpdateOperation.delete_vectors(ids, names), lambda f: qe.UpdateOperation.delete_vectors_by_filter(f, names))
        if key == ("POST", "points/payload"):
            return self.set_payload(coll, b)
        if key == ("POST", "points/payload/delete"):
            keys = string_list(b, "keys", "payload keys")
            return self.by_points_or_filter(coll, b, lambda ids: qe.UpdateOperation.delete_payload(ids, keys), lambda f: qe.UpdateOperation.delete_payload_by_filter(f, keys))
        if key == ("POST", "facet"):
            return self.facet(coll, b)
        raise HttpError(404, f"Not found: {method} /{'/'.join(parts)}")

    def create_collection(self, name: str, b: dict[str, Any]) -> bool:
        """PUT /collections/{name}: `vectors` ({size, distance} unnamed, or {name: {size, distance}})
        and `sparse_vectors` ({name: {modifier?: "idf"}}); other settings are accepted and ignored."""
        schema = F.Schema.from_create(b)
        if list(schema.dense) == [""] and schema.sparse:
            raise BadRequest("qdrant-local: the unnamed dense vector cannot be combined with sparse vectors; name the dense vector")
        self.store.create(name, schema)
        return True

    def info(self, coll: Collection) -> dict[str, Any]:
        info = coll.read(lambda sh: sh.info())
        schema = {}
        for field, idx in info.payload_schema.items():
            schema[field] = {"data_type": str(idx.data_type).rsplit(".", 1)[-1].lower(), "params": {}, "points": idx.points}
            if not schema[field]["params"]:
                del schema[field]["params"]
        return {
            "status": "green",
            "optimizer_status": "ok",
            "points_count": info.points_count,
            "indexed_vectors_count": info.indexed_vectors_count,
            "segments_count": info.segments_count,
            "config": {"params": coll.schema.to_meta()},
            "payload_schema": schema,
        }

    def create_index(self, coll: Collection, b: dict[str, Any]) -> dict[str, Any]:
        field, schema = b.get("field_name"), b.get("field_schema")
        if not isinstance(field, str) or not field:
            raise BadRequest("Format error in JSON body: field_name must be a non-empty string")
        if isinstance(schema, dict):
            schema = schema.get("type")
        if schema not in SCHEMAS:
            raise BadRequest(f"Format error in JSON body: field_schema must be one of {', '.join(SCHEMAS)} (or {{type: ...}}), got {b.get('field_schema')!r}")
        coll.write(qe.UpdateOperation.create_field_index(field, SCHEMAS[schema]), 0)
        return self.op_result()

    def upsert(self, coll: Collection, b: dict[str, Any]) -> dict[str, Any]:
        points: list[Any] = []
        with edge_call():
            if "points" in b:
                raw = b["points"]
                if not isinstance(raw, list):
                    raise BadRequest("Format error in JSON body: points must be a list")
                for i, p in enumerate(raw):
                    if not isinstance(p, dict) or "id" not in p or "vector" not in p:
                        raise BadRequest(f"Format error in JSON body: points[{i}] must be {{id, vector, payload?}}")
                    payload = p.get("payload")
                    if payload is not None and not isinstance(payload, dict):
                        raise BadRequest(f"Format error in JSON body: points[{i}].payload must be an object")
                    if payload is not None and not payload_depth_ok(payload):
                        raise BadRequest(f"Format error in JSON body: points[{i}].payload nests deeper than {MAX_PAYLOAD_DEPTH} levels")
                    points.append(qe.Point(F.parse_id(p["id"], f"points[{i}].id"), coll.schema.point_vector(p["vector"], f"points[{i}].vector"), payload))
            elif isinstance(b.get("batch"), dict):
                batch = b["batch"]
                ids, vectors = batch.get("ids"), batch.get("vectors")
                payloads = batch.get("payloads") or [None] * (len(ids) if isinstance(ids, list) else 0)
                if not isinstance(ids, list) or not isinstance(payloads, list) or not len(ids) == len(payloads):
                    raise BadRequest("Format error in JSON body: batch must be {ids, vectors, payloads?} lists of equal length")
                vecs = coll.schema.batch_vectors(vectors, len(ids))
                for i, (pid, vec, payload) in enumerate(zip(ids, vecs, payloads)):
                    if payload is not None and not isinstance(payload, dict):
                        raise BadRequest(f"Format error in JSON body: batch.payloads[{i}] must be an object")
                    if payload is not None and not payload_depth_ok(payload):
                        raise BadRequest(f"Format error in JSON body: batch.payloads[{i}] nests deeper than {MAX_PAYLOAD_DEPTH} levels")
                    points.append(qe.Point(F.parse_id(pid, f"batch.ids[{i}]"), vec, payload))
            else:
                raise BadRequest("Format error in JSON body: expected {points: [...]} or {batch: {...}}")
        if points:
            coll.write(qe.UpdateOperation.upsert_points(points), len(points))
        return self.op_result()

    def retrieve(self, coll: Collection, b: dict[str, Any]) -> list[dict[str, Any]]:
        ids = F.parse_ids(b.get("ids"), "ids")
        wp, wv = F.with_payload(b.get("with_payload"), True), coll.schema.with_vector(b.get("with_vector"))
        records = coll.read(lambda sh: sh.retrieve(ids, with_payload=wp, with_vector=wv))
        return [record_out(r, wv, False) for r in records]

    def query_request(self, coll: Collection, b: dict[str, Any], where: str) -> tuple[Any, bool | list[str]]:
        """One Query API request: `query` on the `using` vector (dense, sparse, or a BM25 Document),
        `prefetch` (nested) with `fusion`/`rrf` on top, filter, limit, offset, score_threshold, params."""
        if b.get("lookup_from") is not None:
            raise BadRequest(f"qdrant-local: {where}lookup_from is not supported")
        schema = coll.schema
        wv = schema.with_vector(b.get("with_vector"), f"{where}with_vector")
        with edge_call():
            req = qe.QueryRequest(
                limit=F.limit(b.get("limit"), 10, f"{where}limit"),
                offset=F.limit(b.get("offset"), 0, f"{where}offset"),
                query=schema.query(b.get("query"), b.get("using"), where),
                prefetches=schema.prefetches(b.get("prefetch"), where),
                filter=F.parse_filter(b.get("filter"), f"{where}filter"),
                with_payload=F.with_payload(b.get("with_payload"), False),
                with_vector=wv,
                score_threshold=F.score_threshold(b.get("score_threshold"), where),
                params=F.search_params(b.get("params"), where),
            )
        return req, wv

    def scroll(self, coll: Collection, b: dict[str, Any]) -> dict[str, Any]:
        offset = b.get("offset")
        order = b.get("order_by")
        wv = coll.schema.with_vector(b.get("with_vector"))
        with edge_call():
            req = qe.ScrollRequest(
                offset=None if offset is None else F.parse_id(offset, "offset"),
                limit=F.limit(b.get("limit"), 10, "limit"),
                filter=F.parse_filter(b.get("filter")),
                with_payload=F.with_payload(b.get("with_payload"), True),
                with_vector=wv,
                order_by=None if order is None else F.order_by(order),
            )
        records, next_offset = coll.read(lambda sh: sh.scroll(req))
        return {
            "points": [record_out(r, wv, False) for r in records],
            "next_page_offset": None if order is not None or next_offset is None else F.id_out(next_offset),
        }

    def delete_points(self, coll: Collection, b: dict[str, Any]) -> dict[str, Any]:
        return self.by_points_or_filter(coll, b, qe.UpdateOperation.delete_points, qe.UpdateOperation.delete_points_by_filter)

    def update_vectors(self, coll: Collection, b: dict[str, Any]) -> dict[str, Any]:
        """PUT points/vectors: replace the named vectors given for each point, keep the others
        (404 when a point does not exist, as Qdrant)."""
        raw = b.get("points")
        if not isinstance(raw, list):
            raise BadRequest("Format error in JSON body: points must be a list of {id, vector}")
        updates = []
        with edge_call():
            for i, p in enumerate(raw):
                if not isinstance(p, dict) or set(p) != {"id", "vector"}:
                    raise BadRequest(f"Format error in JSON body: points[{i}] must be {{id, vector}}")
                updates.append(qe.PointVectors(F.parse_id(p["id"], f"points[{i}].id"), coll.schema.point_vector(p["vector"], f"points[{i}].vector")))
            condition = F.parse_filter(b.get("update_filter"), "update_filter")
        if updates:
            coll.write(qe.UpdateOperation.update_vectors(updates, condition), len(updates))
        return self.op_result()

    def set_payload(self, coll: Collection, b: dict[str, Any]) -> dict[str, Any]:
        """POST points/payload: merge `payload` into the points' payloads (at `key` if given)."""
        payload, key = b.get("payload"), b.get("key")
        if not isinstance(payload, dict):
            raise BadRequest("Format error in JSON body: payload must be an object")
        if not payload_depth_ok(payload):
            raise BadRequest(f"Format error in JSON body: payload nests deeper than {MAX_PAYLOAD_DEPTH} levels")
        if key is not None and not isinstance(key, str):
            raise BadRequest("Format error in JSON body: key must be a string")
        return self.by_points_or_filter(coll, b, lambda ids: qe.UpdateOperation.set_payload(ids, payload, key), lambda f: qe.UpdateOperation.set_payload_by_filter(f, payload, key))

    def by_points_or_filter(self, coll: Collection, b: dict[str, Any], by_ids: Callable[[list[Any]], Any], by_filter: Callable[[Any], Any]) -> dict[str, Any]:
        """An update selecting points by `points` (ids) or by `filter`, exactly one of them."""
        if (b.get("points") is None) == (b.get("filter") is None):
            raise BadRequest("Format error in JSON body: expected either points (ids) or filter")
        with edge_call():
            if b.get("points") is not None:
                ids = F.parse_ids(b["points"], "points")
                op = by_ids(ids) if ids else None
                n = len(ids)
            else:
                op, n = by_filter(F.parse_filter(b["filter"])), 1
        if op is not None:
            coll.write(op, n)
        return self.op_result()

    def facet(self, coll: Collection, b: dict[str, Any]) -> dict[str, Any]:
        key = b.get("key")
        if not isinstance(key, str) or not key:
            raise BadRequest("Format error in JSON body: key must be a non-empty string")
        with edge_call():
            req = qe.FacetRequest(key, limit=F.limit(b.get("limit"), 10, "limit"), exact=bool(b.get("exact") or False), filter=F.parse_filter(b.get("filter")))
        res = coll.read(lambda sh: sh.facet(req))
        return {"hits": [{"value": h.value, "count": h.count} for h in res.hits]}


def make_handler(api: Api, log_requests: bool) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "qdrant-local"
        sys_version = ""
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            if log_requests:
                log(f"{self.address_string()} {format % args}")

        def send(self, status: int, payload: bytes, content_type: str = "application/json") -> None:
            reason = self.responses.get(status, ("",))[0]
            head = (
                f"HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {len(payload)}\r\n"
                + ("Connection: close\r\n" if self.close_connection else "")
                + "\r\n"
            )
            self.wfile.write(head.encode("latin-1") + payload)
            if log_requests:
                self.log_request(status, len(payload))

        def read_body(self) -> Any:
            if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                chunks = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        break
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()
                raw = b"".join(chunks)
            else:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if not raw.strip():
                return None
            try:
                return json.loads(raw)
            except RecursionError:
                raise BadRequest("Format error in JSON body: nested too deeply") from None
            except ValueError as e:
                raise BadRequest(f"Format error in JSON body: {e}") from None

        def dispatch(self, method: str) -> None:
            started = time.perf_counter()
            path = urlsplit(self.path).path
            try:
                body = self.read_body()
                if method == "GET" and path == "/":
                    self.send(200, dumps({"title": TITLE, "version": VERSION}))
                    return
                if method == "GET" and path in ("/healthz", "/readyz", "/livez"):
                    self.send(200, f"{path[1:]} check passed".encode(), "text/plain")
                    return
                parts = [unquote(p) for p in path.strip("/").split("/")]
                result = api.handle(method, parts, body)
                out = {"result": result, "status": "ok", "time": time.perf_counter() - started}
                self.send(200, dumps(out))
            except (BadRequest, HttpError) as e:
                status = e.status if isinstance(e, HttpError) else 400
                self.send(status, dumps({"status": {"error": str(e)}, "time": 0.0}))
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
            except Exception as e:  # noqa: BLE001 - a bug: answer 500 and log it
                log(f"500 on {method} {self.path}:\n{traceback.format_exc()}")
                self.send(500, dumps({"status": {"error": f"Service internal error: {e}"}, "time": 0.0}))

        def do_GET(self) -> None:  # noqa: N802
            self.dispatch("GET")

        def do_PUT(self) -> None:  # noqa: N802
            self.dispatch("PUT")

        def do_POST(self) -> None:  # noqa: N802
            self.dispatch("POST")

        def do_DELETE(self) -> None:  # noqa: N802
            self.dispatch("DELETE")

        def do_PATCH(self) -> None:  # noqa: N802
            self.dispatch("PATCH")

    return Handler


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


def optimize_worker(path: str) -> int:
    """Child-process mode: optimize (build HNSW for) the shard copy at `path`, then close it."""
    try:
        os.nice(10)
    except OSError:
        pass
    shard = qe.EdgeShard.load(path)
    try:
        shard.optimize()
        shard.flush()
    finally:
        shard.close()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=TITLE)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=6333)
    parser.add_argument("--data", default="./qdrant-local-data")
    parser.add_argument("--log-requests", action="store_true", help="log every request to stderr")
    parser.add_argument("--optimize", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.optimize:
        return optimize_worker(args.optimize)

    store = Store(Path(args.data).resolve())
    server = Server((args.host, args.port), make_handler(Api(store), args.log_requests))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True, name="http").start()
    threading.Thread(target=store.optimizer_loop, daemon=True, name="optimizer").start()
    log(f"listening on http://{args.host}:{server.server_address[1]} data={store.data}")
    while not stop.wait(1.0):
        pass
    log("shutting down")
    server.shutdown()
    server.server_close()
    store.close_all()
    log("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
