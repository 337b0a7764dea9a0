"""The official anthropic Python SDK against a dshc mock provider's
Anthropic-compatible endpoint (base URL `<server>/anthropic`, as DeepSeek
documents `https://api.deepseek.com/anthropic`): one call per case, each
printed as one JSON line of what the client surfaced. The assertions live in
the Rust test that runs this (harness/cli/tests/it/real_clients.rs)."""

import json
import sys
import time

import anthropic

client = anthropic.Anthropic(base_url=sys.argv[1] + "/anthropic", api_key="sk-dshc-test")
MODEL = "deepseek-v4-flash"
SYSTEM = (
    "You are a weather assistant for travellers. Answer in one short sentence. "
    "Use the get_weather tool for every city the user names, one call per city, "
    "and never guess a forecast. If a city is ambiguous, ask which one is meant. "
    "Report temperatures in Celsius and mention rain when the forecast has any."
)
TOOLS = [{
    "name": "get_weather",
    "description": "The current weather of one city.",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "City name"}},
        "required": ["city"],
    },
}]


def emit(case, **fields):
    print(json.dumps({"case": case, **fields}), flush=True)


def surfaced(message, event_types=None):
    """What a final message carries: its blocks by kind, stop reason, usage."""
    seen = {
        "id": message.id, "type": message.type, "role": message.role,
        "text": "".join(block.text for block in message.content if block.type == "text"),
        "thinking": "".join(block.thinking for block in message.content if block.type == "thinking"),
        "signatures": [block.signature for block in message.content if block.type == "thinking"],
        "calls": [{"id": block.id, "name": block.name, "input": block.input}
                  for block in message.content if block.type == "tool_use"],
        "blocks": [block.type for block in message.content],
        "stop_reason": message.stop_reason,
        "usage": {key: getattr(message.usage, key) for key in (
            "input_tokens", "output_tokens", "cache_read_input_tokens",
            "cache_creation_input_tokens")},
    }
    if event_types is not None:
        seen["events"] = event_types
    return seen


def stream(messages, **options):
    """Run one streamed call through the SDK's stream helper; return the
    accumulated message and the raw event types seen."""
    event_types = []
    with client.messages.stream(model=MODEL, max_tokens=1024, system=SYSTEM,
                                messages=messages, **options) as events:
        for event in events:
            if event.type in ("message_start", "content_block_start", "content_block_delta",
                              "content_block_stop", "message_delta", "message_stop"):
                kind = event.type
                if event.type == "content_block_delta":
                    kind += ":" + event.delta.type
                event_types.append(kind)
        return surfaced(events.get_final_message(), event_types)


def error_of(error):
    body = error.body if isinstance(error.body, dict) else {}
    return {"status": error.status_code, "message": error.message,
            "body_type": body.get("type"), "type": (body.get("error") or {}).get("type"),
            "error_message": (body.get("error") or {}).get("message")}


def main():
    emit("text", **stream([{"role": "user", "content": "Say hello."}]))
    emit("thinking", **stream([{"role": "user", "content": [
        {"type": "text", "text": "What is 6 times 7?"}]}]))

    question = {"role": "user", "content": "Weather in Paris and Rome?"}
    calls = stream([question], tools=TOOLS)
    emit("tool_use", **calls)
    thinking = [{"type": "thinking", "thinking": calls["thinking"],
                 "signature": calls["signatures"][0]}]
    tool_use = [{"type": "tool_use", "id": call["id"], "name": call["name"], "input": call["input"]}
                for call in calls["calls"]]
    results = {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": call["id"], "content": "18 C, sunny"}
        for call in calls["calls"]]}
    emit("tool_result", **stream(
        [question, {"role": "assistant", "content": thinking + tool_use}, results], tools=TOOLS))

    whole = client.messages.create(
        model=MODEL, max_tokens=1024, system=SYSTEM,
        messages=[{"role": "user", "content": "Answer without streaming."}])
    emit("whole", **surfaced(whole))

    started = time.monotonic()
    waited = stream([{"role": "user", "content": "Rate limited?"}])
    emit("rate_limit", elapsed_ms=round((time.monotonic() - started) * 1000), **waited)

    # The tool round trip again, with the thinking dropped: DeepSeek's 400.
    dropped = [question, {"role": "assistant", "content": tool_use}, results]
    for case, messages, options in [
            ("thinking_dropped", dropped, {"tools": TOOLS}),
            ("overflow", [{"role": "user", "content": "Too long"}],
             {"model": "dshc-small-window", "max_tokens": 100}),
            ("max_tokens", [{"role": "user", "content": "Too many tokens"}],
             {"max_tokens": 2_000_000}),
            ("exhausted", [{"role": "user", "content": "Unscripted"}], {})]:
        try:
            # An explicit timeout: the SDK itself refuses a non-streamed
            # call whose max_tokens could outlast its default one.
            client.messages.create(**{"model": MODEL, "max_tokens": 1024, "system": SYSTEM,
                                      "messages": messages, "timeout": 60, **options})
            emit(case, error=None)
        except anthropic.APIStatusError as error:
            emit(case, error=error_of(error))


main()
