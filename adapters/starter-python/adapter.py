#!/usr/bin/env python3
"""A starter dshc adapter in Python: it speaks the whole adapter protocol
(docs/adapter-protocol.md, version 1) and implements nothing, so every case
is skipped with a reason. Copy it, then replace `run_case` with calls into
your implementation, one observation per command of the case.

    dshc check --adapter 'python3 adapter.py'

stdout carries only protocol replies, one JSON object per line; anything
else you print goes to stderr. Standard library only.
"""

import json
import sys

PROTOCOL_VERSION = 1

IMPLEMENTATION = {
    "name": "starter-python",
    "version": "0.0.0",
    "language": "python",
}

# The contract levels this adapter runs: "assembly" (the prompt registry and
# assemble), "loop" (the agent loop). dshc skips cases of other levels
# without sending them.
LEVELS = ["assembly"]


def run_case(case):
    """Run one case in a fresh implementation and return the reply body.

    `case` is {id, level, config, commands, world?}. A real adapter runs each
    of `case["commands"]` in order and returns
    {"result": {"observations": [...]}}, one observation per command; see
    the "Cases" and "Observations" sections of the protocol document.
    """
    return {"skipped": {"reason": f"starter-python implements nothing yet ({len(case['commands'])} commands not run)"}}


def reply_to(request):
    """The reply body for one request, or None when the adapter must exit."""
    command = request.get("cmd")
    if command == "start":
        if request.get("version") != PROTOCOL_VERSION:
            return {"errored": {"context": f"dshc speaks protocol {request.get('version')}, this adapter {PROTOCOL_VERSION}"}}
        return {
            "started": {
                "version": PROTOCOL_VERSION,
                "implementation": IMPLEMENTATION,
                "capabilities": {"levels": LEVELS},
            }
        }
    if command == "run":
        try:
            return run_case(request["case"])
        except Exception as error:  # a failure of the adapter, not of the implementation
            return {"errored": {"context": f"{type(error).__name__}: {error}"}}
    if command == "stop":
        return {"stopped": {}}
    return {"errored": {"context": f"this adapter does not offer {command!r}"}}


def main():
    for line in sys.stdin:
        request = json.loads(line)
        body = reply_to(request)
        reply = {"seq": request["seq"], **body}
        sys.stdout.write(json.dumps(reply, ensure_ascii=False) + "\n")
        sys.stdout.flush()
        if "stopped" in body or (request.get("cmd") == "start" and "errored" in body):
            return


if __name__ == "__main__":
    main()
