"""A workflow app on the Python SDK (`upstash-workflow`), for workflow.integration.spec.ts: the SDK's sync `serve`
behind the standard library's HTTP server, configured from the environment alone (QSTASH_URL, QSTASH_TOKEN and the
signing keys, as the SDK reads them). Serves POST /workflow on 127.0.0.1:$PORT; the workflow runs a step, sleeps 1 s,
runs a second step and returns both results.
"""
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from upstash_workflow import serve
from upstash_workflow.workflow_types import _SyncRequest


def workflow(context):
    payload = context.request_payload
    first = context.run("first", lambda: f"{payload['marker']}!")
    context.sleep("nap", 1)
    second = context.run("second", lambda: first.upper())
    return {"first": first, "second": second}


handler = serve(workflow)["handler"]


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length).decode("utf-8")
        request = _SyncRequest(
            body=body,
            # The SDK looks headers up by their canonical names: the message's case-insensitive mapping, as the
            # frameworks' adapters pass theirs.
            headers=self.headers,
            method="POST",
            url=f"http://127.0.0.1:{self.server.server_port}{self.path}",
        )
        response = handler(request)
        self.send_response(response.status)
        for name, value in (response.headers or {}).items():
            self.send_header(name, value)
        data = response.body.encode("utf-8")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])), Handler)
print("ready", flush=True)
server.serve_forever()
