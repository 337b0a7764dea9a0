// The official openai npm package against a dshc mock provider: one call per
// case, each printed as one JSON line of what the client surfaced. The
// assertions live in the Rust test that runs this (harness/cli/tests/it/real_clients.rs).
import OpenAI from "openai";
import { MODEL, OPENAI_TOOLS as TOOLS, SYSTEM, emit } from "./session.mjs";

const client = new OpenAI({ baseURL: process.argv[2], apiKey: "sk-dshc-test" });


async function stream(messages, options = {}) {
  const seen = {
    text: "", reasoning: "", calls: [], usage: null, finish_reason: null,
    fingerprints: new Set(), empty_choice_chunks: 0,
  };
  const chunks = await client.chat.completions.create({ model: MODEL, messages, stream: true, ...options });
  for await (const chunk of chunks) {
    seen.fingerprints.add(chunk.system_fingerprint);
    if (chunk.usage) seen.usage = chunk.usage;
    if (chunk.choices.length === 0) {
      seen.empty_choice_chunks += 1;
      continue;
    }
    const [choice] = chunk.choices;
    const delta = choice.delta;
    seen.text += delta.content ?? "";
    seen.reasoning += delta.reasoning_content ?? "";
    for (const call of delta.tool_calls ?? []) {
      const slot = (seen.calls[call.index] ??= { id: null, name: null, arguments: "" });
      slot.id = call.id ?? slot.id;
      slot.name = call.function?.name ?? slot.name;
      slot.arguments += call.function?.arguments ?? "";
    }
    if (choice.finish_reason) seen.finish_reason = choice.finish_reason;
  }
  return { ...seen, fingerprints: [...seen.fingerprints].sort() };
}

const errorOf = (error) => ({
  status: error.status, message: error.error?.message ?? error.message,
  code: error.code ?? null, type: error.type ?? null,
});

const system = { role: "system", content: SYSTEM };
emit("text", await stream([system, { role: "user", content: "Say hello." }]));
emit("reasoning", await stream([system, { role: "user", content: "What is 6 times 7?" }]));

const question = { role: "user", content: "Weather in Paris and Rome?" };
const calls = await stream([system, question], { tools: TOOLS });
emit("tool_calls", calls);
const assistant = {
  role: "assistant", content: "", reasoning_content: calls.reasoning,
  tool_calls: calls.calls.map((call) => ({
    id: call.id, type: "function", function: { name: call.name, arguments: call.arguments },
  })),
};
const results = calls.calls.map((call) => ({ role: "tool", tool_call_id: call.id, content: "18 C, sunny" }));
emit("tool_results", await stream([system, question, assistant, ...results], { tools: TOOLS }));

const whole = await client.chat.completions.create({
  model: MODEL, stream: false, messages: [system, { role: "user", content: "Answer without streaming." }],
});
emit("non_streaming", {
  text: whole.choices[0].message.content, finish_reason: whole.choices[0].finish_reason,
  usage: whole.usage, fingerprints: [whole.system_fingerprint], object: whole.object,
});

const started = performance.now();
const waited = await stream([system, { role: "user", content: "Rate limited?" }]);
emit("rate_limit", { elapsed_ms: Math.round(performance.now() - started), ...waited });

for (const [testCase, content, options] of [
  ["overflow", "Too long", { model: "dshc-small-window", max_tokens: 100 }],
  ["max_tokens", "Too many tokens", { max_tokens: 2_000_000 }],
  ["exhausted", "Unscripted", {}],
]) {
  try {
    await client.chat.completions.create({ model: MODEL, messages: [system, { role: "user", content }], ...options });
    emit(testCase, { error: null });
  } catch (error) {
    if (!(error instanceof OpenAI.APIError)) throw error;
    emit(testCase, { error: errorOf(error) });
  }
}
