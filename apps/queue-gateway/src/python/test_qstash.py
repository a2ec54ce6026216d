"""The official Python SDK `qstash` against queue-gateway and queue-worker (run by python-sdk.integration.spec.ts with
QSTASH_URL, QSTASH_TOKEN, QSTASH_CURRENT_SIGNING_KEY and QSTASH_NEXT_SIGNING_KEY of a fresh project). Destinations
are a local HTTP server of this process, reached through the SDK's own `url` settings (the SDK's own tests publish to
internet hosts). docs/queue.md describes the API these calls reach."""

import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from qstash import QStash, Receiver
from qstash.errors import QStashError

TOKEN = os.environ["QSTASH_TOKEN"]


class Destination:
    """A local HTTP server recording every request by path; `/fail` answers 500, everything else 200."""

    def __init__(self):
        self.requests = {}
        self.lock = threading.Lock()
        destination = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length).decode()
                with destination.lock:
                    destination.requests.setdefault(self.path, []).append({"headers": dict(self.headers), "body": body})
                status = 500 if self.path.startswith("/fail") else 200
                self.send_response(status)
                self.end_headers()
                self.wfile.write(b"ok")

            do_PUT = do_POST

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def received(self, path, count=1, timeout=15.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                got = list(self.requests.get(path, []))
            if len(got) >= count:
                return got
            time.sleep(0.05)
        raise AssertionError(f"{path}: {len(got)} of {count} requests within {timeout}s")


@pytest.fixture(scope="module")
def destination():
    server = Destination()
    yield server
    server.server.shutdown()


@pytest.fixture
def client() -> QStash:
    return QStash(TOKEN, base_url=os.environ["QSTASH_URL"])


def test_publish_is_delivered_signed(client, destination):
    res = client.message.publish_json(url=f"{destination.url}/hello", body={"hello": "world"}, headers={"X-Test": "1"})
    assert res.message_id
    [request] = destination.received("/hello")
    assert json.loads(request["body"]) == {"hello": "world"}
    assert request["headers"].get("X-Test") == "1"
    receiver = Receiver(current_signing_key=os.environ["QSTASH_CURRENT_SIGNING_KEY"], next_signing_key=os.environ["QSTASH_NEXT_SIGNING_KEY"])
    receiver.verify(signature=request["headers"]["Upstash-Signature"], body=request["body"], url=f"{destination.url}/hello")


def test_delayed_message_can_be_read_and_cancelled(client, destination):
    res = client.message.publish(url=f"{destination.url}/later", body="x", delay="1h", label="py-label")
    message = client.message.get(res.message_id)
    assert message.message_id == res.message_id and message.url == f"{destination.url}/later"
    client.message.cancel(res.message_id)
    with pytest.raises(QStashError):
        client.message.get(res.message_id)


def test_batch_and_deduplication(client, destination):
    results = client.message.batch_json([{"url": f"{destination.url}/batch", "body": {"n": i}} for i in range(3)])
    assert len(results) == 3
    destination.received("/batch", 3)
    first = client.message.publish(url=f"{destination.url}/dedup", body="a", deduplication_id="same")
    second = client.message.publish(url=f"{destination.url}/dedup", body="a", deduplication_id="same")
    assert second.deduplicated is True and second.message_id == first.message_id


def test_queues(client, destination):
    client.queue.upsert("py-queue", parallelism=2)
    assert client.queue.get("py-queue").parallelism == 2
    client.message.enqueue_json(queue="py-queue", url=f"{destination.url}/queued", body={"q": 1})
    destination.received("/queued")
    client.queue.pause("py-queue")
    assert client.queue.get("py-queue").paused is True
    client.queue.resume("py-queue")
    assert "py-queue" in [q.name for q in client.queue.list()]
    client.queue.delete("py-queue")


def test_schedules(client, destination):
    schedule_id = client.schedule.create(destination=f"{destination.url}/cron", cron="*/5 * * * *", body="tick")
    schedule = client.schedule.get(schedule_id)
    assert schedule.cron == "*/5 * * * *" and schedule.destination == f"{destination.url}/cron"
    client.schedule.pause(schedule_id)
    assert client.schedule.get(schedule_id).paused is True
    client.schedule.resume(schedule_id)
    assert schedule_id in [s.schedule_id for s in client.schedule.list()]
    client.schedule.delete(schedule_id)


def test_url_groups(client, destination):
    client.url_group.upsert_endpoints(url_group="py-group", endpoints=[{"url": f"{destination.url}/g1"}, {"url": f"{destination.url}/g2", "name": "two"}])
    assert len(client.url_group.get("py-group").endpoints) == 2
    results = client.message.publish(url_group="py-group", body="fanout")
    assert len(results) == 2
    destination.received("/g1")
    destination.received("/g2")
    client.url_group.delete("py-group")


def test_failed_deliveries_reach_the_dlq(client, destination):
    res = client.message.publish(url=f"{destination.url}/fail", body="boom", retries=0)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        entries = client.dlq.list().messages
        found = [m for m in entries if m.message_id == res.message_id]
        if found:
            break
        time.sleep(0.2)
    assert found, "the failed message is in the DLQ"
    client.dlq.delete(found[0].dlq_id)


def test_logs_list_the_delivery(client, destination):
    res = client.message.publish(url=f"{destination.url}/logged", body="log me")
    destination.received("/logged")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        states = {log.state.value if hasattr(log.state, "value") else log.state for log in client.log.list(filter={"message_id": res.message_id}).logs}
        if "DELIVERED" in states:
            break
        time.sleep(0.2)
    assert "DELIVERED" in states


def test_signing_keys_and_bad_token(client):
    keys = client.signing_key.get()
    assert keys.current == os.environ["QSTASH_CURRENT_SIGNING_KEY"]
    with pytest.raises(QStashError):
        QStash("wrong-token", base_url=os.environ["QSTASH_URL"]).queue.list()


def test_bad_input_is_a_clear_error(client):
    with pytest.raises(QStashError):
        client.message.publish(url="not a url", body="x")
