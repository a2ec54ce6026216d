"""Tests for qdrant-local over HTTP: python test_server.py (needs the venv from deploy/python/install.sh)."""

from __future__ import annotations

import json
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


class QdrantLocalTest(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="qdrant-local-test-")
        self.server = Server(self.dir).start()

    def tearDown(self) -> None:
        if self.server.proc and self.server.proc.poll() is None:
            self.assertEqual(self.server.stop(), 0)
        shutil.rmtree(self.dir, ignore_errors=True)

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


def nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = {"a": value}
    return value


if __name__ == "__main__":
    unittest.main()
