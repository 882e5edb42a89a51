"""A small MCP server on stdio (newline-delimited JSON-RPC), standard library only: it
offers one tool, `now`, which answers the current UTC time."""

import datetime
import json
import sys

NOW = {
    "name": "now",
    "description": "The current time in UTC, as ISO 8601.",
    "inputSchema": {"type": "object", "properties": {}},
}


def answer(request_id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    method, request_id = message.get("method"), message.get("id")
    if request_id is None:
        continue  # a notification
    if method == "initialize":
        answer(request_id, {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "clock", "version": "0.1.0"},
        })
    elif method == "tools/list":
        answer(request_id, {"tools": [NOW]})
    elif method == "tools/call":
        now = datetime.datetime.now(datetime.timezone.utc).isoformat()
        answer(request_id, {"content": [{"type": "text", "text": now}]})
    elif method == "ping":
        answer(request_id, {})
    else:
        sys.stdout.write(json.dumps({
            "jsonrpc": "2.0", "id": request_id,
            "error": {"code": -32601, "message": f"no method {method}"},
        }) + "\n")
        sys.stdout.flush()
