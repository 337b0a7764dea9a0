// The official @anthropic-ai/sdk npm package against a dshc mock provider's
// Anthropic-compatible endpoint (base URL `<server>/anthropic`, as DeepSeek
// documents `https://api.deepseek.com/anthropic`): one call per case, each
// printed as one JSON line of what the client surfaced. The assertions live
// in the Rust test that runs this (harness/cli/tests/it/real_clients.rs).
import Anthropic from "@anthropic-ai/sdk";
import { MODEL, SYSTEM, WEATHER_TOOL, emit } from "./session.mjs";

const client = new Anthropic({ baseURL: `${process.argv[2]}/anthropic`, apiKey: "sk-dshc-test" });
const { parameters: input_schema, ...weather } = WEATHER_TOOL;
const TOOLS = [{ ...weather, input_schema }];
const EVENT_TYPES = new Set([
  "message_start", "content_block_start", "content_block_delta",
  "content_block_stop", "message_delta", "message_stop",
]);


// What a final message carries: its blocks by kind, stop reason, usage.
function surfaced(message, events) {
  const of = (type) => message.content.filter((block) => block.type === type);
  const seen = {
    id: message.id, type: message.type, role: message.role,
    text: of("text").map((block) => block.text).join(""),
    thinking: of("thinking").map((block) => block.thinking).join(""),
    signatures: of("thinking").map((block) => block.signature),
    calls: of("tool_use").map((block) => ({ id: block.id, name: block.name, input: block.input })),
    blocks: message.content.map((block) => block.type),
    stop_reason: message.stop_reason,
    usage: {
      input_tokens: message.usage.input_tokens,
      output_tokens: message.usage.output_tokens,
      cache_read_input_tokens: message.usage.cache_read_input_tokens,
      cache_creation_input_tokens: message.usage.cache_creation_input_tokens,
    },
  };
  if (events) seen.events = events;
  return seen;
}

// One streamed call through the SDK's stream helper: the accumulated
// message and the raw event types seen.
async function stream(messages, options = {}) {
  const events = [];
  const running = client.messages.stream({ model: MODEL, max_tokens: 1024, system: SYSTEM, messages, ...options });
  running.on("streamEvent", (event) => {
    if (!EVENT_TYPES.has(event.type)) return;
    events.push(event.type === "content_block_delta" ? `${event.type}:${event.delta.type}` : event.type);
  });
  return surfaced(await running.finalMessage(), events);
}

const errorOf = (error) => ({
  status: error.status, message: error.message,
  body_type: error.error?.type ?? null, type: error.error?.error?.type ?? null,
  error_message: error.error?.error?.message ?? null,
});

emit("text", await stream([{ role: "user", content: "Say hello." }]));
emit("thinking", await stream([{ role: "user", content: [{ type: "text", text: "What is 6 times 7?" }] }]));

const question = { role: "user", content: "Weather in Paris and Rome?" };
const calls = await stream([question], { tools: TOOLS });
emit("tool_use", calls);
const thinking = [{ type: "thinking", thinking: calls.thinking, signature: calls.signatures[0] }];
const toolUse = calls.calls.map((call) => ({ type: "tool_use", id: call.id, name: call.name, input: call.input }));
const results = {
  role: "user",
  content: calls.calls.map((call) => ({ type: "tool_result", tool_use_id: call.id, content: "18 C, sunny" })),
};
emit("tool_result", await stream(
  [question, { role: "assistant", content: [...thinking, ...toolUse] }, results], { tools: TOOLS }));

const whole = await client.messages.create({
  model: MODEL, max_tokens: 1024, system: SYSTEM,
  messages: [{ role: "user", content: "Answer without streaming." }],
});
emit("whole", surfaced(whole));

const started = performance.now();
const waited = await stream([{ role: "user", content: "Rate limited?" }]);
emit("rate_limit", { elapsed_ms: Math.round(performance.now() - started), ...waited });

// The tool round trip again, with the thinking dropped: DeepSeek's 400.
const dropped = [question, { role: "assistant", content: toolUse }, results];
for (const [testCase, messages, options] of [
  ["thinking_dropped", dropped, { tools: TOOLS }],
  ["overflow", [{ role: "user", content: "Too long" }], { model: "dshc-small-window", max_tokens: 100 }],
  ["max_tokens", [{ role: "user", content: "Too many tokens" }], { max_tokens: 2_000_000 }],
  ["exhausted", [{ role: "user", content: "Unscripted" }], {}],
]) {
  try {
    // An explicit timeout: the SDK itself refuses a non-streamed call whose
    // max_tokens could outlast its default one.
    await client.messages.create(
      { model: MODEL, max_tokens: 1024, system: SYSTEM, messages, ...options }, { timeout: 60_000 });
    emit(testCase, { error: null });
  } catch (error) {
    if (!(error instanceof Anthropic.APIError)) throw error;
    emit(testCase, { error: errorOf(error) });
  }
}
