"""A small MCP server on stdio (newline-delimited JSON-RPC), standard library only: its
one tool, `plan`, asks the person for input (`elicitation/create`) and answers with what
they chose: the city and days accepted, or that they declined or cancelled."""

import json
import sys

PLAN = {
    "name": "plan",
    "description": "Plans a trip: asks the person where to and for how long.",
    "inputSchema": {"type": "object", "properties": {}},
}

ASK = {
    "message": "Where to, and for how long?",
    "requestedSchema": {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The city to visit"},
            "days": {"type": "integer", "minimum": 1, "maximum": 30},
        },
        "required": ["city"],
    },
}


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(request_id, result):
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def ask():
    """Sends the request for input and reads until its answer arrives."""
    send({"jsonrpc": "2.0", "id": "ask-1", "method": "elicitation/create", "params": ASK})
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("id") == "ask-1" and "method" not in message:
            return message
    return {"error": {"message": "the client went away"}}


for line in sys.stdin:
    message = json.loads(line)
    method, request_id = message.get("method"), message.get("id")
    if request_id is None:
        continue  # a notification
    if method == "initialize":
        answer(request_id, {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "trip", "version": "0.1.0"},
        })
    elif method == "tools/list":
        answer(request_id, {"tools": [PLAN]})
    elif method == "tools/call":
        asked = ask()
        result = asked.get("result", {})
        action = result.get("action", "error")
        if action == "accept":
            content = result.get("content", {})
            text = f"trip to {content.get('city')} for {content.get('days', 'some')} days"
        else:
            text = f"no trip: the person chose {action}"
        answer(request_id, {"content": [{"type": "text", "text": text}]})
    elif method == "ping":
        answer(request_id, {})
    else:
        send({
            "jsonrpc": "2.0", "id": request_id,
            "error": {"code": -32601, "message": f"no method {method}"},
        })
