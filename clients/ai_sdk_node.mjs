// The Vercel AI SDK (`ai` with its `@ai-sdk/deepseek` provider) against a dshc
// mock provider: the openai Node driver's cases, each printed as one JSON line
// of what the SDK surfaced. The assertions live in the Rust test that runs
// this (harness/cli/tests/it/real_clients.rs).
//
// What the SDK cannot express, and so is not printed: the chunk framing (it
// hands over parts, not chunks, and no count of usage-only chunks). Usage
// comes in the SDK's own shape (`inputTokenDetails`, `outputTokenDetails`);
// DeepSeek's cache counts, `system_fingerprint` and `object` come in
// `providerMetadata.deepseek`. It retries by itself (twice by default),
// waiting `Retry-After` where the server sends one, and never retries a 400.
import { APICallError, generateText, jsonSchema, streamText, tool } from "ai";
import { createDeepSeek } from "@ai-sdk/deepseek";
import { MODEL, SYSTEM, WEATHER_TOOL, emit } from "./session.mjs";

const deepseek = createDeepSeek({ baseURL: process.argv[2], apiKey: "sk-dshc-test" });
// No `execute`: the SDK stops at the calls, and the driver answers them.
const TOOLS = {
  [WEATHER_TOOL.name]: tool({
    description: WEATHER_TOOL.description,
    inputSchema: jsonSchema(WEATHER_TOOL.parameters),
  }),
};


// The SDK's usage without `raw` (the provider's own body, not a surfaced value).
const usageOf = ({ raw: _raw, ...usage }) => usage;

// One streamed call: the parts the SDK yields, folded into what they say.
async function stream(messages, options = {}) {
  const seen = {
    text: "", reasoning: "", calls: [], input_deltas: 0, usage: null,
    finish_reason: null, raw_finish_reason: null, provider_metadata: null,
  };
  const result = streamText({ model: deepseek(MODEL), system: SYSTEM, messages, ...options });
  for await (const part of result.fullStream) {
    if (part.type === "text-delta") seen.text += part.text;
    if (part.type === "reasoning-delta") seen.reasoning += part.text;
    if (part.type === "tool-input-delta") seen.input_deltas += 1;
    if (part.type === "tool-call") {
      seen.calls.push({ id: part.toolCallId, name: part.toolName, input: part.input });
    }
    if (part.type === "error") throw part.error;
    if (part.type === "finish-step") {
      seen.usage = usageOf(part.usage);
      seen.finish_reason = part.finishReason;
      seen.raw_finish_reason = part.rawFinishReason ?? null;
      seen.provider_metadata = part.providerMetadata ?? null;
    }
  }
  return { ...seen, messages: (await result.response).messages };
}

const errorOf = (error) => ({
  status: error.statusCode, message: error.data?.error?.message ?? error.message,
  code: error.data?.error?.code ?? null, type: error.data?.error?.type ?? null,
  retryable: error.isRetryable,
});

const { messages: _text, ...text } = await stream([{ role: "user", content: "Say hello." }]);
emit("text", text);
const { messages: _reasoning, ...reasoning } = await stream([{ role: "user", content: "What is 6 times 7?" }]);
emit("reasoning", reasoning);

// The SDK's own response messages replayed: reasoning, calls, then results.
const question = { role: "user", content: "Weather in Paris and Rome?" };
const { messages: reply, ...calls } = await stream([question], { tools: TOOLS });
emit("tool_calls", { ...calls, replayed: reply.flatMap((message) => message.content.map((part) => part.type)) });
const results = {
  role: "tool",
  content: calls.calls.map((call) => ({
    type: "tool-result", toolCallId: call.id, toolName: call.name,
    output: { type: "text", value: "18 C, sunny" },
  })),
};
const { messages: _results, ...answered } = await stream([question, ...reply, results], { tools: TOOLS });
emit("tool_results", answered);

const whole = await generateText({
  model: deepseek(MODEL), system: SYSTEM, messages: [{ role: "user", content: "Answer without streaming." }],
});
emit("non_streaming", {
  text: whole.text, finish_reason: whole.finishReason, usage: usageOf(whole.usage),
  provider_metadata: whole.providerMetadata ?? null,
});

const started = performance.now();
const { messages: _waited, ...waited } = await stream([{ role: "user", content: "Rate limited?" }]);
emit("rate_limit", { elapsed_ms: Math.round(performance.now() - started), ...waited });

for (const [testCase, content, options] of [
  ["overflow", "Too long", { model: deepseek("dshc-small-window"), maxOutputTokens: 100 }],
  ["max_tokens", "Too many tokens", { maxOutputTokens: 2_000_000 }],
  ["exhausted", "Unscripted", {}],
]) {
  try {
    await generateText({
      model: deepseek(MODEL), system: SYSTEM, messages: [{ role: "user", content }], ...options,
    });
    emit(testCase, { error: null });
  } catch (error) {
    if (!APICallError.isInstance(error)) throw error;
    emit(testCase, { error: errorOf(error) });
  }
}
