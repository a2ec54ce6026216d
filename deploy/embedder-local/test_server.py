"""Tests for embedder-local over HTTP: python test_server.py (needs the venv from deploy/python/install.sh)."""

from __future__ import annotations

import json
import math
import signal
import socket
import subprocess
import sys
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


class EmbedderLocalTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.port = free_port()
        cls.proc = subprocess.Popen([sys.executable, str(SERVER), "--port", str(cls.port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{cls.port}/healthz", timeout=1):
                    break
            except OSError:
                if time.time() > deadline or cls.proc.poll() is not None:
                    raise RuntimeError("embedder-local did not start") from None
                time.sleep(0.1)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.proc.send_signal(signal.SIGTERM)
        assert cls.proc.wait(10) == 0

    def call(self, method: str, path: str, body: object = None) -> tuple[int, dict]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method, headers={"content-type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def test_models(self) -> None:
        status, out = self.call("GET", "/v1/models")
        self.assertEqual(status, 200)
        self.assertEqual(out["data"][0]["id"], "all-minilm-l6-v2")

    def test_embeddings_are_semantic(self) -> None:
        texts = ["A cat sits on the mat", "A kitten is resting on a rug", "Stock markets fell sharply today"]
        status, out = self.call("POST", "/v1/embeddings", {"model": "text-embedding-3-small", "input": texts})
        self.assertEqual(status, 200)
        self.assertEqual(out["object"], "list")
        self.assertEqual(out["model"], "all-minilm-l6-v2")
        self.assertGreater(out["usage"]["prompt_tokens"], 10)
        vecs = [d["embedding"] for d in sorted(out["data"], key=lambda d: d["index"])]
        self.assertEqual([len(v) for v in vecs], [384] * 3)
        for v in vecs:
            self.assertAlmostEqual(math.sqrt(sum(x * x for x in v)), 1.0, places=4)
        cos = lambda a, b: sum(x * y for x, y in zip(a, b))  # noqa: E731
        similar, unrelated = cos(vecs[0], vecs[1]), cos(vecs[0], vecs[2])
        self.assertGreater(similar, 0.5)
        self.assertGreater(similar - unrelated, 0.3)
        # a single string gives the same vector as in a batch (padding does not change it)
        status, one = self.call("POST", "/v1/embeddings", {"model": "x", "input": texts[0]})
        self.assertEqual(len(one["data"]), 1)
        self.assertGreater(cos(one["data"][0]["embedding"], vecs[0]), 0.9999)

    def test_errors(self) -> None:
        for body in ({"model": "m"}, {"model": "m", "input": []}, {"model": "m", "input": [1, 2]}, [1]):
            status, out = self.call("POST", "/v1/embeddings", body)
            self.assertEqual(status, 400, body)
            self.assertEqual(out["error"]["type"], "invalid_request_error")

    def test_lone_surrogate_is_a_400_naming_the_input(self) -> None:
        # json.dumps writes the lone surrogate as the escape \ud800, which json.loads reads back as is
        status, out = self.call("POST", "/v1/embeddings", {"model": "m", "input": ["fine", "bad \ud800 text"]})
        self.assertEqual(status, 400)
        self.assertEqual(out["error"]["message"], "'input[1]' is not valid Unicode text: it contains a lone UTF-16 surrogate")
        self.assertNotIn("Traceback", json.dumps(out))


if __name__ == "__main__":
    unittest.main()
