"""The official openai Python SDK against a dshc mock provider: one call per
case, each printed as one JSON line of what the client surfaced. The
assertions live in the Rust test that runs this (harness/cli/tests/it/real_clients.rs)."""

import json
import sys
import time

import openai

client = openai.OpenAI(base_url=sys.argv[1], api_key="sk-dshc-test")
MODEL = "deepseek-v4-flash"
SYSTEM = (
    "You are a weather assistant for travellers. Answer in one short sentence. "
    "Use the get_weather tool for every city the user names, one call per city, "
    "and never guess a forecast. If a city is ambiguous, ask which one is meant. "
    "Report temperatures in Celsius and mention rain when the forecast has any."
)
TOOLS = [{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather of one city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}},
            "required": ["city"],
        },
    },
}]


def emit(case, **fields):
    print(json.dumps({"case": case, **fields}), flush=True)


def usage_of(usage):
    return None if usage is None else usage.model_dump()


def stream(messages, **options):
    """Run one streamed call; return what the stream carried."""
    seen = {"text": "", "reasoning": "", "calls": {}, "usage": None,
            "finish_reason": None, "fingerprints": [], "empty_choice_chunks": 0}
    for chunk in client.chat.completions.create(
            model=MODEL, messages=messages, stream=True, **options):
        seen["fingerprints"].append(chunk.system_fingerprint)
        if chunk.usage is not None:
            seen["usage"] = usage_of(chunk.usage)
        if not chunk.choices:
            seen["empty_choice_chunks"] += 1
            continue
        choice = chunk.choices[0]
        delta = choice.delta
        seen["text"] += delta.content or ""
        seen["reasoning"] += getattr(delta, "reasoning_content", None) or ""
        for call in delta.tool_calls or []:
            slot = seen["calls"].setdefault(call.index, {"id": None, "name": None, "arguments": ""})
            slot["id"] = call.id or slot["id"]
            if call.function is not None:
                slot["name"] = call.function.name or slot["name"]
                slot["arguments"] += call.function.arguments or ""
        if choice.finish_reason is not None:
            seen["finish_reason"] = choice.finish_reason
    seen["calls"] = [seen["calls"][index] for index in sorted(seen["calls"])]
    seen["fingerprints"] = sorted(set(seen["fingerprints"]))
    return seen


def error_of(error):
    body = error.body if isinstance(error.body, dict) else {}
    return {"status": error.status_code, "message": error.message,
            "code": body.get("code"), "type": body.get("type")}


def main():
    system = {"role": "system", "content": SYSTEM}
    emit("text", **stream([system, {"role": "user", "content": "Say hello."}]))
    emit("reasoning", **stream([system, {"role": "user", "content": "What is 6 times 7?"}]))

    question = {"role": "user", "content": "Weather in Paris and Rome?"}
    calls = stream([system, question], tools=TOOLS)
    emit("tool_calls", **calls)
    assistant = {
        "role": "assistant", "content": "", "reasoning_content": calls["reasoning"],
        "tool_calls": [{"id": call["id"], "type": "function",
                        "function": {"name": call["name"], "arguments": call["arguments"]}}
                       for call in calls["calls"]],
    }
    results = [{"role": "tool", "tool_call_id": call["id"], "content": "18 C, sunny"}
               for call in calls["calls"]]
    emit("tool_results", **stream([system, question, assistant, *results], tools=TOOLS))

    whole = client.chat.completions.create(
        model=MODEL, stream=False,
        messages=[system, {"role": "user", "content": "Answer without streaming."}])
    emit("non_streaming", text=whole.choices[0].message.content,
         finish_reason=whole.choices[0].finish_reason, usage=usage_of(whole.usage),
         fingerprints=[whole.system_fingerprint], object=whole.object)

    started = time.monotonic()
    waited = stream([system, {"role": "user", "content": "Rate limited?"}])
    emit("rate_limit", elapsed_ms=round((time.monotonic() - started) * 1000), **waited)

    for case, content, options in [
            ("overflow", "Too long", {"model": "dshc-small-window", "max_tokens": 100}),
            ("max_tokens", "Too many tokens", {"max_tokens": 2_000_000}),
            ("exhausted", "Unscripted", {})]:
        try:
            client.chat.completions.create(**{
                "model": MODEL, "messages": [system, {"role": "user", "content": content}], **options})
            emit(case, error=None)
        except openai.APIStatusError as error:
            emit(case, error=error_of(error))


main()
