"""Tests for qdrant-local over HTTP: python test_server.py (needs the venv from deploy/python/install.sh)."""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request
from pathlib import Path

SERVER = Path(__file__).resolve().parent / "server.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, data: str, port: int | None = None) -> None:
        self.data, self.port = data, port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> "Server":
        self.proc = subprocess.Popen(
            [sys.executable, str(SERVER), "--host", "127.0.0.1", "--port", str(self.port), "--data", self.data],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.time() + 15
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=1) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("server did not start: " + (self.proc.stderr.read().decode() if self.proc.poll() is not None and self.proc.stderr else ""))

    def stop(self, sig: int = signal.SIGTERM) -> int:
        assert self.proc is not None
        self.proc.send_signal(sig)
        rc = self.proc.wait(10)
        if self.proc.stderr:
            self.proc.stderr.close()
        return rc

    def call(self, method: str, path: str, body: object = None) -> tuple[int, dict]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method, headers={"content-type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def ok(self, method: str, path: str, body: object = None) -> object:
        status, out = self.call(method, path, body)
        assert status == 200 and out["status"] == "ok", (status, out)
        return out["result"]


def pts(n: int, start: int = 0, dim: int = 4) -> list[dict]:
    return [{"id": i, "vector": [float((i * 7 + d) % 5) + 0.5 for d in range(dim)], "payload": {"k": "ab"[i % 2], "n": i}} for i in range(start, start + n)]


class ServerTest(unittest.TestCase):
    """A qdrant-local of its own for each test, in a new data folder; a server still running must stop cleanly."""

    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="qdrant-local-test-")
        self.server = Server(self.dir).start()

    def tearDown(self) -> None:
        if self.server.proc and self.server.proc.poll() is None:
            self.assertEqual(self.server.stop(), 0)
        shutil.rmtree(self.dir, ignore_errors=True)


class QdrantLocalTest(ServerTest):
    def test_api(self) -> None:
        s = self.server
        self.assertEqual(s.call("GET", "/")[1]["version"], "1.18.0")
        self.assertTrue(s.ok("PUT", "/collections/c", {"vectors": {"size": 4, "distance": "Cosine"}, "on_disk_payload": True}))
        self.assertEqual(s.call("PUT", "/collections/c", {"vectors": {"size": 4, "distance": "Cosine"}})[0], 409)
        self.assertEqual(s.ok("GET", "/collections/c/exists"), {"exists": True})
        self.assertEqual(s.ok("GET", "/collections"), {"collections": [{"name": "c"}]})
        for field, schema in (("k", "keyword"), ("n", {"type": "integer"}), ("b", "bool")):
            self.assertEqual(s.ok("PUT", "/collections/c/index?wait=true", {"field_name": field, "field_schema": schema})["status"], "completed")
        points = pts(10)
        points[0]["payload"]["b"], points[1]["payload"]["b"], points[2]["payload"]["b"] = True, False, 1
        points.append({"id": "0000000000000000000000000000000A", "vector": [1, 2, 3, 4], "payload": {"k": "c"}})
        s.ok("PUT", "/collections/c/points?wait=true", {"points": points})
        s.ok("PUT", "/collections/c/points", {"batch": {"ids": [20, 21], "vectors": [[1, 1, 1, 1], [2, 1, 1, 1]], "payloads": [{"k": "z"}, None]}})

        info = s.ok("GET", "/collections/c")
        self.assertEqual(info["points_count"], 13)
        self.assertEqual(info["config"]["params"]["vectors"], {"size": 4, "distance": "Cosine"})
        self.assertEqual(info["payload_schema"]["k"]["data_type"], "keyword")

        got = s.ok("POST", "/collections/c/points", {"ids": [1, "00000000-0000-0000-0000-00000000000a", 99], "with_payload": ["n"], "with_vector": True})
        self.assertEqual([r["id"] for r in got], [1, "00000000-0000-0000-0000-00000000000a"])
        self.assertEqual(got[0]["payload"], {"n": 1})
        self.assertEqual(len(got[0]["vector"]), 4)

        res = s.ok("POST", "/collections/c/points/query", {"query": [1, 2, 3, 4], "limit": 1, "with_payload": True})
        self.assertEqual(res["points"][0]["id"], "00000000-0000-0000-0000-00000000000a")
        self.assertAlmostEqual(res["points"][0]["score"], 1.0, places=4)
        flt = {"must": {"key": "k", "match": {"value": "a"}}, "must_not": [{"has_id": [0]}]}
        res = s.ok("POST", "/collections/c/points/query", {"query": {"nearest": [1, 2, 3, 4]}, "filter": flt, "limit": 100})
        self.assertEqual(sorted(p["id"] for p in res["points"]), [2, 4, 6, 8])
        self.assertNotIn("payload", res["points"][0])
        res = s.ok("POST", "/collections/c/points/query", {"query": {"order_by": {"key": "n", "direction": "desc"}}, "limit": 2})
        self.assertEqual([p["id"] for p in res["points"]], [9, 8])
        batch = s.ok("POST", "/collections/c/points/query/batch", {"searches": [{"query": [1, 2, 3, 4], "limit": 1}, {"filter": {"must": [{"key": "n", "range": {"gte": 8}}]}}]})
        self.assertEqual(len(batch), 2)
        self.assertEqual(sorted(p["id"] for p in batch[1]["points"]), [8, 9])

        page = s.ok("POST", "/collections/c/points/scroll", {"limit": 3})
        self.assertEqual([p["id"] for p in page["points"]], [0, 1, 2])
        self.assertEqual(page["next_page_offset"], 3)
        page = s.ok("POST", "/collections/c/points/scroll", {"limit": 3, "order_by": {"key": "n", "direction": "desc", "start_from": 5}})
        self.assertEqual([p["payload"]["n"] for p in page["points"]], [5, 4, 3])
        self.assertIsNone(page["next_page_offset"])

        count = lambda f: s.ok("POST", "/collections/c/points/count", {"filter": f, "exact": True})["count"]  # noqa: E731
        self.assertEqual(count({"should": [{"key": "k", "match": {"any": ["c", "z"]}}]}), 2)
        self.assertEqual(count({"must": [{"key": "k", "match": {"except": ["a", "b"]}}]}), 2)
        self.assertEqual(count({"must": [{"is_empty": {"key": "k"}}]}), 1)
        self.assertEqual(count({"must": [{"key": "n", "range": {"gt": 2, "lte": 5}}]}), 3)
        self.assertEqual(count({"must": [{"must": [{"key": "k", "match": {"value": "a"}}], "must_not": [{"key": "n", "range": {"lt": 5}}]}]}), 2)
        self.assertEqual(count({"min_should": {"conditions": [{"key": "k", "match": {"value": "a"}}, {"key": "n", "range": {"lt": 2}}], "min_count": 2}}), 1)
        # booleans: stored true / false, and the integer 1, are told apart
        self.assertEqual(count({"must": [{"key": "b", "match": {"value": True}}]}), 1)
        self.assertEqual(count({"must": [{"key": "b", "match": {"value": False}}]}), 1)
        self.assertEqual(count({"must": [{"key": "b", "match": {"any": [True, False]}}]}), 2)

        hits = s.ok("POST", "/collections/c/facet", {"key": "k", "exact": True})["hits"]
        self.assertEqual(hits[0], {"value": "a", "count": 5})

        s.ok("POST", "/collections/c/points/delete?wait=true", {"points": [0, "00000000-0000-0000-0000-00000000000a"]})
        s.ok("POST", "/collections/c/points/delete", {"filter": {"must": [{"key": "k", "match": {"value": "b"}}]}})
        self.assertEqual(s.ok("POST", "/collections/c/points/count", {})["count"], 6)

        # errors
        self.assertEqual(s.call("GET", "/collections/nope"), (404, {"status": {"error": "Not found: Collection `nope` doesn't exist!"}, "time": 0.0}))
        status, out = s.call("PUT", "/collections/c/points", {"points": [{"id": 1, "vector": [1, 2, 3]}]})
        self.assertEqual((status, out["status"]["error"]), (400, "Wrong input: Vector dimension error: expected dim: 4, got 3"))
        status, out = s.call("PUT", "/collections/c/points", {"points": [{"id": "nope", "vector": [1, 2, 3, 4]}]})
        self.assertEqual((status, out["status"]["error"]), (400, "Unable to parse UUID: nope"))
        status, out = s.call("POST", "/collections/c/points/count", {"filter": {"must": [{"key": "k", "regex": "x"}]}})
        self.assertEqual(status, 400)
        self.assertIn("filter.must[0]", out["status"]["error"])
        status, out = s.call("POST", "/collections/c/points/scroll", {"order_by": "k"})
        self.assertEqual(status, 400)  # order_by needs a range index
        self.assertEqual(s.call("POST", "/collections/c/points/query", {"query": [1, 2]})[0], 400)

        self.assertTrue(s.ok("DELETE", "/collections/c"))
        self.assertEqual(os.listdir(self.dir), [])

    def test_survives_sigkill_and_optimizes(self) -> None:
        s = self.server
        s.ok("PUT", "/collections/d", {"vectors": {"size": 4, "distance": "Dot"}})
        s.ok("PUT", "/collections/d/index", {"field_name": "k", "field_schema": "keyword"})
        s.ok("PUT", "/collections/d/points?wait=true", {"points": pts(1000)})
        # >= 1000 writes then 1 s idle: the optimizer swaps in an optimized copy (shard-1)
        meta = Path(self.dir, "d", "collection.json")
        deadline = time.time() + 10
        while json.loads(meta.read_text())["shard"] != "shard-1":
            self.assertLess(time.time(), deadline, "optimizer did not run")
            time.sleep(0.1)
        s.ok("PUT", "/collections/d/points?wait=true", {"points": pts(5, start=1000)})
        s.ok("POST", "/collections/d/points/delete?wait=true", {"points": [0]})
        self.assertEqual(s.stop(signal.SIGKILL), -signal.SIGKILL)

        self.server = s = Server(self.dir, s.port).start()
        self.assertEqual(s.ok("POST", "/collections/d/points/count", {})["count"], 1004)
        self.assertEqual(s.ok("POST", "/collections/d/points", {"ids": [1004]})[0]["payload"], {"k": "a", "n": 1004})
        self.assertEqual(s.ok("GET", "/collections/d")["payload_schema"]["k"]["data_type"], "keyword")
        self.assertEqual(sorted(os.listdir(Path(self.dir, "d"))), ["collection.json", "shard-1"])
        self.assertEqual(s.stop(), 0)
        self.server = s = Server(self.dir, s.port).start()
        self.assertEqual(s.ok("POST", "/collections/d/points/count", {})["count"], 1004)

    def test_refuses_payloads_nested_too_deep(self) -> None:
        s = self.server
        s.ok("PUT", "/collections/p", {"vectors": {"size": 2, "distance": "Cosine"}})
        status, out = s.call("PUT", "/collections/p/points?wait=true", {"points": [{"id": 1, "vector": [1, 0], "payload": {"m": nested(127)}}]})
        self.assertEqual((status, out["status"]["error"]), (400, "Format error in JSON body: points[0].payload nests deeper than 64 levels"))
        status, out = s.call("PUT", "/collections/p/points", {"batch": {"ids": [1], "vectors": [[1, 0]], "payloads": [{"m": nested(127)}]}})
        self.assertEqual(status, 400)
        s.ok("PUT", "/collections/p/points?wait=true", {"points": [{"id": 2, "vector": [1, 0], "payload": {"m": nested(60)}}]})
        self.assertEqual(s.stop(), 0)
        self.server = s = Server(self.dir, s.port).start()
        self.assertEqual(s.ok("POST", "/collections/p/points/count", {})["count"], 1)

    def test_a_collection_that_cannot_load_is_out_of_service_and_the_rest_serve(self) -> None:
        s = self.server
        for name in ("good", "poisoned"):
            s.ok("PUT", f"/collections/{name}", {"vectors": {"size": 2, "distance": "Cosine"}})
            s.ok("PUT", f"/collections/{name}/points?wait=true", {"points": [{"id": 1, "vector": [1, 0], "payload": {"k": "v"}}]})
        self.assertEqual(s.stop(), 0)
        # What earlier versions let through: Edge acknowledges a 127-level payload, then cannot read its WAL.
        import qdrant_edge as qe

        shard = qe.EdgeShard.load(str(Path(self.dir, "poisoned", "shard-0")))
        shard.update(qe.UpdateOperation.upsert_points([qe.Point(2, [0.0, 1.0], {"m": nested(127)})]))
        shard.close()

        self.server = s = Server(self.dir, s.port).start()
        self.assertEqual(s.ok("POST", "/collections/good/points/count", {})["count"], 1)
        self.assertEqual(s.ok("GET", "/collections"), {"collections": [{"name": "good"}, {"name": "poisoned"}]})
        self.assertEqual(s.ok("GET", "/collections/poisoned/exists"), {"exists": True})
        for method, path, body in (("POST", "points/count", {}), ("POST", "points/query", {"query": [1, 0]}), ("GET", "", None)):
            status, out = s.call(method, f"/collections/poisoned/{path}".rstrip("/"), body)
            self.assertEqual(status, 503, path)
            self.assertTrue(out["status"]["error"].startswith("Service unavailable: Collection `poisoned` could not be loaded"), out)
        self.assertEqual(s.call("PUT", "/collections/poisoned", {"vectors": {"size": 2, "distance": "Cosine"}})[0], 409)
        # Deleting it is the way out: the name can be created again.
        self.assertTrue(s.ok("DELETE", "/collections/poisoned"))
        self.assertFalse(Path(self.dir, "poisoned").exists())
        s.ok("PUT", "/collections/poisoned", {"vectors": {"size": 2, "distance": "Cosine"}})
        self.assertEqual(s.ok("POST", "/collections/poisoned/points/count", {})["count"], 0)


HYBRID = {"vectors": {"dense": {"size": 3, "distance": "Cosine"}}, "sparse_vectors": {"sparse": {"modifier": "idf"}}}


def idf(n_with_term: int, n_docs: int) -> float:
    """Qdrant's IDF modifier: ln((N - n + 0.5) / (n + 0.5) + 1)."""
    return math.log((n_docs - n_with_term + 0.5) / (n_with_term + 0.5) + 1)


class SparseAndHybridTest(ServerTest):
    def query(self, coll: str, body: dict) -> list[tuple[object, float]]:
        return [(p["id"], p["score"]) for p in self.server.ok("POST", f"/collections/{coll}/points/query", body)["points"]]

    def test_named_vectors_config_is_reported_and_persisted(self) -> None:
        s = self.server
        s.ok("PUT", "/collections/h", HYBRID)
        s.ok("PUT", "/collections/sp", {"sparse_vectors": {"sparse": {}}})
        s.ok("PUT", "/collections/two", {"vectors": {"a": {"size": 2, "distance": "Dot"}, "b": {"size": 3, "distance": "Euclid"}}})
        expected = {
            "h": {"vectors": {"dense": {"size": 3, "distance": "Cosine"}}, "sparse_vectors": {"sparse": {"modifier": "idf"}}},
            "sp": {"vectors": {}, "sparse_vectors": {"sparse": {}}},
            "two": {"vectors": {"a": {"size": 2, "distance": "Dot"}, "b": {"size": 3, "distance": "Euclid"}}},
        }
        for name, params in expected.items():
            self.assertEqual(s.ok("GET", f"/collections/{name}")["config"]["params"], params)
        self.assertEqual(json.loads(Path(self.dir, "h", "collection.json").read_text()), {**expected["h"], "shard": "shard-0"})
        self.assertEqual(s.stop(), 0)
        self.server = s = Server(self.dir, s.port).start()
        for name, params in expected.items():
            self.assertEqual(s.ok("GET", f"/collections/{name}")["config"]["params"], params)
        s.ok("PUT", "/collections/h/points?wait=true", {"points": [{"id": 1, "vector": {"dense": [1, 0, 0], "sparse": {"indices": [3], "values": [1]}}}]})
        self.assertEqual(s.ok("POST", "/collections/h/points/count", {})["count"], 1)

        for body, needle in (
            ({"vectors": {"x": {"size": 0, "distance": "Dot"}}}, "vectors.x.size"),
            ({"sparse_vectors": {"s": {"modifier": "bm42"}}}, "sparse_vectors.s.modifier"),
            ({"vectors": {"s": {"size": 2, "distance": "Dot"}}, "sparse_vectors": {"s": {}}}, "`s`"),
            ({"vectors": {"size": 2, "distance": "Dot"}, "sparse_vectors": {"s": {}}}, "unnamed"),
            ({"sparse_vectors": "s"}, "sparse_vectors"),
            ({}, "vectors or sparse_vectors"),
        ):
            status, out = s.call("PUT", "/collections/bad", body)
            self.assertEqual(status, 400, body)
            self.assertIn(needle, out["status"]["error"])
        self.assertFalse(s.ok("GET", "/collections/bad/exists")["exists"])

    def test_sparse_points_idf_scores_and_vectors_out(self) -> None:
        s = self.server
        s.ok("PUT", "/collections/idf", {"sparse_vectors": {"s": {"modifier": "idf"}}})
        s.ok("PUT", "/collections/raw", {"sparse_vectors": {"s": {}}})
        docs = {1: ([1, 5], [1.0, 2.0]), 2: ([5, 7], [0.5, 1.0]), 3: ([1], [3.0]), 4: ([9, 2, 4], [1.0, 2.0, 0.25])}
        for coll in ("idf", "raw"):
            s.ok("PUT", f"/collections/{coll}/points?wait=true", {"points": [{"id": i, "vector": {"s": {"indices": ix, "values": v}}, "payload": {"n": i}} for i, (ix, v) in docs.items()]})
        q = {"indices": [1, 5], "values": [1.0, 0.5]}
        # Without a modifier: the inner product of the shared dimensions.
        got = self.query("raw", {"query": q, "using": "s"})
        self.assertEqual([i for i, _ in got], [3, 1, 2])
        for (i, score), want in zip(got, (3.0, 2.0, 0.25)):
            self.assertAlmostEqual(score, want, places=5, msg=i)
        # With IDF: each dimension's product weighted by ln((N - n + 0.5) / (n + 0.5) + 1), N = 4 points.
        got = dict(self.query("idf", {"query": {"nearest": q}, "using": "s"}))
        self.assertAlmostEqual(got[1], 1.0 * idf(2, 4) + 2.0 * 0.5 * idf(2, 4), places=5)
        self.assertAlmostEqual(got[2], 0.5 * 0.5 * idf(2, 4), places=5)
        self.assertAlmostEqual(got[3], 3.0 * idf(2, 4), places=5)
        self.assertNotIn(4, got)
        self.assertEqual(self.query("raw", {"query": {"indices": [], "values": []}, "using": "s"}), [])
        # offset, limit, score threshold and filters apply to sparse queries too
        self.assertEqual([i for i, _ in self.query("raw", {"query": q, "using": "s", "limit": 1, "offset": 1})], [1])
        self.assertEqual([i for i, _ in self.query("raw", {"query": q, "using": "s", "score_threshold": 1.0})], [3, 1])
        self.assertEqual([i for i, _ in self.query("raw", {"query": q, "using": "s", "filter": {"must": [{"key": "n", "range": {"lte": 2}}]}})], [1, 2])

        # Vectors out: sorted by index, as {indices, values}; with_vector true or a list of names.
        rec = s.ok("POST", "/collections/raw/points", {"ids": [4], "with_vector": True})[0]
        self.assertEqual(rec["vector"], {"s": {"indices": [2, 4, 9], "values": [2.0, 0.25, 1.0]}})
        rec = s.ok("POST", "/collections/raw/points", {"ids": [4], "with_vector": ["s"], "with_payload": False})[0]
        self.assertEqual(rec, {"id": 4, "vector": {"s": {"indices": [2, 4, 9], "values": [2.0, 0.25, 1.0]}}})
        page = s.ok("POST", "/collections/raw/points/scroll", {"limit": 1, "with_vector": True})
        self.assertEqual(page["points"][0]["vector"], {"s": {"indices": [1, 5], "values": [1.0, 2.0]}})
        hit = s.ok("POST", "/collections/raw/points/query", {"query": q, "using": "s", "limit": 1, "with_vector": ["s"]})["points"][0]
        self.assertEqual(hit["vector"], {"s": {"indices": [1], "values": [3.0]}})
        self.assertEqual(s.call("POST", "/collections/raw/points", {"ids": [4], "with_vector": ["nope"]})[0], 400)

        # Batch upsert with named sparse vectors
        s.ok("PUT", "/collections/raw/points?wait=true", {"batch": {"ids": [10, 11], "vectors": {"s": [{"indices": [8], "values": [1]}, {"indices": [8, 1], "values": [2, 1]}]}}})
        self.assertEqual([i for i, _ in self.query("raw", {"query": {"indices": [8], "values": [1]}, "using": "s"})], [11, 10])

    def test_bad_sparse_input_gets_qdrants_400s(self) -> None:
        s = self.server
        s.ok("PUT", "/collections/h", HYBRID)
        cases = [
            ({"dense": [1, 0, 0], "sparse": {"indices": [1, 1], "values": [1, 2]}}, "Validation error in JSON body: [points[0].vector.sparse.indices: must be unique]"),
            ({"sparse": {"indices": [1, 2], "values": [1]}}, "Validation error in JSON body: [points[0].vector.sparse.values: must be the same length as indices]"),
            ({"sparse": {"indices": [-1], "values": [1]}}, "points[0].vector.sparse.indices must be a list of integers in 0..4294967295"),
            ({"sparse": {"indices": [2**32], "values": [1]}}, "points[0].vector.sparse.indices must be a list of integers in 0..4294967295"),
            ({"sparse": {"indices": [1], "values": ["x"]}}, "points[0].vector.sparse.values must be a list of numbers"),
            ({"sparse": {"indices": [1]}}, "points[0].vector.sparse must be a sparse vector {indices, values}"),
            ({"sparse": [1, 2, 3]}, "vector `sparse` is sparse"),
            ({"dense": {"indices": [1], "values": [1]}}, "vector `dense` is dense"),
            ({"dense": [1, 0]}, "Wrong input: Vector dimension error: expected dim: 3, got 2"),
            ({"nope": [1, 0, 0]}, "Wrong input: Not existing vector name error: nope"),
            ([1, 0, 0], "Wrong input: Not existing vector name error: "),
            ({"sparse": {"text": "x", "model": "bge-small"}}, "has no inference model 'bge-small'"),
            ({"dense": {"text": "x", "model": "qdrant/bm25"}}, "vector `dense` is dense"),
            ({"sparse": {"text": "x", "model": "qdrant/bm25", "options": {"language": "klingon"}}}, "unsupported language"),
            ({"sparse": {"text": "x", "model": "qdrant/bm25", "options": {"kk": 1}}}, "unknown BM25 option"),
        ]
        for vector, message in cases:
            status, out = s.call("PUT", "/collections/h/points?wait=true", {"points": [{"id": 1, "vector": vector}]})
            self.assertEqual(status, 400, vector)
            self.assertIn(message, out["status"]["error"])
        status, out = s.call("PUT", "/collections/h/points", {"batch": {"ids": [1, 2], "vectors": {"sparse": [{"indices": [1], "values": [1]}]}}})
        self.assertEqual(status, 400)
        self.assertIn("batch.vectors.sparse", out["status"]["error"])
        self.assertEqual(s.ok("POST", "/collections/h/points/count", {})["count"], 0)

        for body, message in (
            ({"query": {"indices": [1, 1], "values": [1, 1]}, "using": "sparse"}, "query.indices: must be unique"),
            ({"query": [1, 0, 0], "using": "sparse"}, "vector `sparse` is sparse"),
            ({"query": [1, 0, 0]}, "Not existing vector name error: "),
            ({"query": [1, 0, 0], "using": "x"}, "Not existing vector name error: x"),
            ({"query": {"fusion": "rrf"}}, "cannot apply Fusion without prefetches"),
            ({"query": {"fusion": "max"}, "prefetch": [{"query": [1, 0, 0], "using": "dense"}]}, "query.fusion"),
            ({"query": {"rrf": {"weights": [1, 2, 3]}}, "prefetch": [{"query": [1, 0, 0], "using": "dense"}]}, "RRF weights length (3) does not match number of prefetches (1)"),
            ({"query": {"fusion": "rrf"}, "prefetch": [{"query": [1, 0], "using": "dense"}]}, "expected dim: 3, got 2"),
            ({"query": {"fusion": "rrf"}, "prefetch": [{"query": {"indices": [1], "values": [1, 2]}, "using": "sparse"}]}, "prefetch[0].query.values: must be the same length as indices"),
            ({"query": {"fusion": "rrf"}, "prefetch": {"query": [1, 0, 0], "using": "dense", "lookup_from": {"collection": "x"}}}, "lookup_from"),
            ({"query": {"fusion": "rrf"}, "prefetch": [{"query": [1, 0, 0], "using": "dense", "limit": -1}]}, "prefetch[0].limit"),
        ):
            status, out = s.call("POST", "/collections/h/points/query", body)
            self.assertEqual(status, 400, body)
            self.assertIn(message, out["status"]["error"])

    def test_hybrid_prefetch_fusion_and_bm25(self) -> None:
        s = self.server
        s.ok("PUT", "/collections/h", HYBRID)
        texts = {
            1: "The quick brown fox jumps over the lazy dog",
            2: "A lazy afternoon: dogs sleeping in the sun",
            3: "Foxes are quick and clever animals",
            4: "Stock markets rallied on quarterly earnings",
        }
        dense = {1: [1, 0, 0], 2: [0.9, 0.1, 0], 3: [0, 1, 0], 4: [0, 0, 1]}
        points = [{"id": i, "vector": {"dense": dense[i], "sparse": {"text": t, "model": "qdrant/bm25"}}, "payload": {"text": t}} for i, t in texts.items()]
        s.ok("PUT", "/collections/h/points?wait=true", {"points": points})
        # Documents are embedded with Edge's BM25 as documents (term-frequency weights).
        import qdrant_edge as qe

        stored = s.ok("POST", "/collections/h/points", {"ids": [1], "with_vector": ["sparse"]})[0]["vector"]["sparse"]
        want = qe.Bm25().embed_document(texts[1])
        self.assertEqual(stored["indices"], sorted(want.indices))
        by_index = dict(zip(want.indices, want.values))
        for i, v in zip(stored["indices"], stored["values"]):
            self.assertAlmostEqual(v, by_index[i], places=5)

        # A Document query is embedded as a query (weight 1 per token), then scored with IDF.
        bm25 = self.query("h", {"query": {"text": "quick foxes", "model": "Qdrant/bm25"}, "using": "sparse"})
        self.assertEqual(sorted(i for i, _ in bm25), [1, 3])
        lazy = self.query("h", {"query": {"nearest": {"text": "lazy dog", "model": "qdrant/bm25", "options": {"language": "english"}}}, "using": "sparse"})
        self.assertEqual(sorted(i for i, _ in lazy), [1, 2])  # "dogs" stems to "dog"
        ((pid, score),) = self.query("h", {"query": {"text": "earnings", "model": "qdrant/bm25"}, "using": "sparse"})
        self.assertEqual(pid, 4)
        self.assertAlmostEqual(score, bm25_score(s, "h", 4, "earnings"), places=5)
        # language "none": no stemming, no stopwords (the query's "foxes" is not the documents' stem "fox")
        self.assertEqual(len(self.query("h", {"query": {"text": "foxes", "model": "qdrant/bm25"}, "using": "sparse"})), 2)
        self.assertEqual(self.query("h", {"query": {"text": "foxes", "model": "qdrant/bm25", "options": {"language": "none"}}, "using": "sparse"}), [])

        dense_hits = self.query("h", {"query": [1, 0.2, 0], "using": "dense", "limit": 3})
        sparse_hits = self.query("h", {"query": {"text": "lazy dog", "model": "qdrant/bm25"}, "using": "sparse", "limit": 3})
        prefetch = [{"query": [1, 0.2, 0], "using": "dense", "limit": 3}, {"query": {"text": "lazy dog", "model": "qdrant/bm25"}, "using": "sparse", "limit": 3}]
        # RRF: sum over the prefetches of 1 / (k + rank), rank from 0; k = 2 (Qdrant's default) or given.
        for fusion, k in (({"fusion": "rrf"}, 2), ({"rrf": {"k": 60}}, 60)):
            want_rrf: dict[object, float] = {}
            for hits in (dense_hits, sparse_hits):
                for rank, (pid, _) in enumerate(hits):
                    want_rrf[pid] = want_rrf.get(pid, 0.0) + 1 / (k + rank)
            got = self.query("h", {"prefetch": prefetch, "query": fusion, "limit": 10})
            self.assertEqual({i for i, _ in got}, set(want_rrf))
            for pid, score in got:
                self.assertAlmostEqual(score, want_rrf[pid], places=6)
            self.assertEqual([i for i, _ in got], sorted(want_rrf, key=lambda x: -want_rrf[x]))
        weighted = self.query("h", {"prefetch": prefetch, "query": {"rrf": {"k": 2, "weights": [0, 1]}}, "limit": 2})
        self.assertEqual(weighted[0][0], sparse_hits[0][0])
        # DBSF: each prefetch's scores normalised to [mean - 3 sd, mean + 3 sd] (sample sd), then summed.
        got = dict(self.query("h", {"prefetch": prefetch, "query": {"fusion": "dbsf"}}))
        want_dbsf: dict[object, float] = {}
        for hits in (dense_hits, sparse_hits):
            scores = [sc for _, sc in hits]
            mean = sum(scores) / len(scores)
            std = math.sqrt(sum((x - mean) ** 2 for x in scores) / (len(scores) - 1))  # sample deviation
            lo, hi = mean - 3 * std, mean + 3 * std
            for pid, sc in hits:
                want_dbsf[pid] = want_dbsf.get(pid, 0.0) + (sc - lo) / (hi - lo)
        self.assertEqual(set(got), set(want_dbsf))
        for pid, score in got.items():
            self.assertAlmostEqual(score, want_dbsf[pid], places=4, msg=pid)
        # filters in a prefetch, offset on the fused list, a batch of hybrid queries
        filtered = self.query("h", {"prefetch": [{**p, "filter": {"must_not": [{"has_id": [1]}]}} for p in prefetch], "query": {"fusion": "rrf"}})
        self.assertNotIn(1, [i for i, _ in filtered])
        full = self.query("h", {"prefetch": prefetch, "query": {"fusion": "rrf"}})
        self.assertEqual(self.query("h", {"prefetch": prefetch, "query": {"fusion": "rrf"}, "offset": 1, "limit": 2}), full[1:3])
        batch = s.ok("POST", "/collections/h/points/query/batch", {"searches": [
            {"prefetch": prefetch, "query": {"fusion": "rrf"}},
            {"query": {"text": "lazy dog", "model": "qdrant/bm25"}, "using": "sparse", "limit": 3, "with_vector": True},
        ]})
        self.assertEqual([(p["id"], p["score"]) for p in batch[0]["points"]], full)
        self.assertEqual([(p["id"], p["score"]) for p in batch[1]["points"]], sparse_hits)
        self.assertEqual(set(batch[1]["points"][0]["vector"]), {"dense", "sparse"})
        # points may carry only one of the named vectors
        s.ok("PUT", "/collections/h/points?wait=true", {"points": [{"id": 9, "vector": {"sparse": {"text": "lonely dog", "model": "qdrant/bm25"}}}]})
        self.assertEqual(list(s.ok("POST", "/collections/h/points", {"ids": [9], "with_vector": True})[0]["vector"]), ["sparse"])
        self.assertNotIn(9, [i for i, _ in self.query("h", {"query": [1, 0, 0], "using": "dense"})])

    def test_hybrid_collection_optimizes_and_survives_sigkill(self) -> None:
        s = self.server
        s.ok("PUT", "/collections/h", HYBRID)
        words = ["alpha", "beta", "gamma", "delta", "omega", "sigma"]
        points = [
            {"id": i, "vector": {"dense": [1.0 + i % 3, 1.0 + i % 5, 1.0 + i % 7], "sparse": {"text": f"{words[i % 6]} {words[i % 4]} item{i}", "model": "qdrant/bm25"}}}
            for i in range(1000)
        ]
        s.ok("PUT", "/collections/h/points?wait=true", {"points": points})
        q = {"prefetch": [{"query": [1, 2, 3], "using": "dense", "limit": 5}, {"query": {"text": "item7 omega", "model": "qdrant/bm25"}, "using": "sparse", "limit": 5}], "query": {"fusion": "rrf"}, "limit": 5}
        before = self.query("h", q)
        meta = Path(self.dir, "h", "collection.json")
        deadline = time.time() + 20
        while json.loads(meta.read_text())["shard"] != "shard-1":
            self.assertLess(time.time(), deadline, "optimizer did not run")
            time.sleep(0.1)
        self.assertEqual(json.loads(meta.read_text())["sparse_vectors"], {"sparse": {"modifier": "idf"}})
        after = self.query("h", q)
        # (dense ties: many points share a vector, so compare the scores, not the order of tied ids)
        self.assertEqual([round(sc, 6) for _, sc in after], [round(sc, 6) for _, sc in before])
        self.assertIn(7, [i for i, _ in after])
        self.assertEqual(self.query("h", {"query": {"text": "item7", "model": "qdrant/bm25"}, "using": "sparse", "limit": 1})[0][0], 7)
        s.ok("PUT", "/collections/h/points?wait=true", {"points": [{"id": 5000, "vector": {"sparse": {"indices": [1], "values": [1]}}}]})
        self.assertEqual(s.stop(signal.SIGKILL), -signal.SIGKILL)
        self.server = s = Server(self.dir, s.port).start()
        self.assertEqual(s.ok("POST", "/collections/h/points/count", {})["count"], 1001)
        self.assertEqual(s.ok("GET", "/collections/h")["config"]["params"]["sparse_vectors"], {"sparse": {"modifier": "idf"}})
        self.assertEqual(self.query("h", {"query": {"indices": [1], "values": [1]}, "using": "sparse"})[0][0], 5000)

    def test_update_vectors_and_payload(self) -> None:
        s = self.server
        s.ok("PUT", "/collections/h", HYBRID)
        s.ok("PUT", "/collections/h/points?wait=true", {"points": [
            {"id": 1, "vector": {"dense": [1, 0, 0], "sparse": {"indices": [1], "values": [1]}}, "payload": {"ns": "a", "x": 1}},
            {"id": 2, "vector": {"dense": [0, 1, 0]}, "payload": {"ns": "b"}},
        ]})
        get = lambda pid: s.ok("POST", "/collections/h/points", {"ids": [pid], "with_vector": True})[0]  # noqa: E731
        # update_vectors replaces the vectors it names and keeps the others
        s.ok("PUT", "/collections/h/points/vectors?wait=true", {"points": [{"id": 2, "vector": {"sparse": {"indices": [7, 3], "values": [1, 2]}}}]})
        self.assertEqual(get(2)["vector"], {"dense": [0.0, 1.0, 0.0], "sparse": {"indices": [3, 7], "values": [2.0, 1.0]}})
        status, out = s.call("PUT", "/collections/h/points/vectors", {"points": [{"id": 9, "vector": {"dense": [1, 1, 1]}}]})
        self.assertEqual((status, out["status"]["error"]), (404, "Not found: No point with id 9 found"))
        status, out = s.call("PUT", "/collections/h/points/vectors", {"points": [{"id": 2, "vector": {"sparse": {"indices": [1, 1], "values": [1, 1]}}}]})
        self.assertEqual((status, out["status"]["error"]), (400, "Validation error in JSON body: [points[0].vector.sparse.indices: must be unique]"))
        s.ok("POST", "/collections/h/points/vectors/delete?wait=true", {"points": [1], "vector": ["sparse"]})
        self.assertEqual(get(1)["vector"], {"dense": [1.0, 0.0, 0.0]})
        self.assertEqual(s.call("POST", "/collections/h/points/vectors/delete", {"points": [1], "vector": ["nope"]})[0], 400)
        # set_payload merges (by ids or by filter); delete_payload removes keys
        s.ok("POST", "/collections/h/points/payload?wait=true", {"filter": {"must": [{"key": "ns", "match": {"value": "a"}}]}, "payload": {"ns": "renamed"}})
        self.assertEqual(get(1)["payload"], {"ns": "renamed", "x": 1})
        s.ok("POST", "/collections/h/points/payload", {"points": [2], "payload": {"y": [1, 2]}})
        s.ok("POST", "/collections/h/points/payload/delete", {"points": [1], "keys": ["x"]})
        self.assertEqual([get(1)["payload"], get(2)["payload"]], [{"ns": "renamed"}, {"ns": "b", "y": [1, 2]}])
        self.assertEqual(s.call("POST", "/collections/h/points/payload", {"points": [99], "payload": {"a": 1}})[0], 404)
        self.assertEqual(s.call("POST", "/collections/h/points/payload", {"payload": {"a": 1}})[0], 400)
        self.assertEqual(s.call("POST", "/collections/h/points/payload", {"points": [1], "payload": {"m": nested(70)}})[0], 400)


def bm25_score(s: Server, coll: str, pid: int, text: str) -> float:
    """The IDF-weighted BM25 score of point `pid` for a one-token query, from its stored vector."""
    import qdrant_edge as qe

    ((index,),) = [qe.Bm25().embed_query(text).indices]
    vec = s.ok("POST", f"/collections/{coll}/points", {"ids": [pid], "with_vector": True})[0]["vector"]["sparse"]
    total = s.ok("POST", f"/collections/{coll}/points/count", {})["count"]
    n = sum(1 for p in s.ok("POST", f"/collections/{coll}/points/scroll", {"limit": 100, "with_vector": True})["points"] if index in p["vector"]["sparse"]["indices"])
    return vec["values"][vec["indices"].index(index)] * idf(n, total)


def nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = {"a": value}
    return value


if __name__ == "__main__":
    unittest.main()
