// LangChain's DeepSeek chat model (`@langchain/deepseek`, on `@langchain/core`)
// against a dshc mock provider: the openai Node driver's cases, each printed
// as one JSON line of what LangChain surfaced. The assertions live in the Rust
// test that runs this (harness/cli/tests/it/real_clients.rs). Its packages
// need Node 22: clients/run runs it on the Node that clients/node22 installs.
//
// What LangChain cannot express, and so is not printed: the chunk framing (it
// merges chunks into one message) and the response's `object`. Usage is its
// `usage_metadata` (cache reads as `input_token_details.cache_read`). It
// retries by itself (up to 6 times), waiting its own back-off of one to two
// seconds or `Retry-After`, whichever is longer, and never retries a 400.
import { ChatDeepSeek } from "@langchain/deepseek";
import { HumanMessage, SystemMessage, ToolMessage } from "@langchain/core/messages";
import { MODEL, OPENAI_TOOLS as TOOLS, SYSTEM, emit } from "../session.mjs";

const BASE_URL = process.argv[2];
const chat = (fields = {}) =>
  new ChatDeepSeek({ model: MODEL, apiKey: "sk-dshc-test", configuration: { baseURL: BASE_URL }, ...fields });


// What one finished message carries, as LangChain surfaces it.
const surfaced = (message) => ({
  text: message.content,
  reasoning: message.additional_kwargs.reasoning_content ?? null,
  calls: (message.tool_calls ?? []).map((call) => ({ id: call.id, name: call.name, args: call.args })),
  usage: message.usage_metadata ?? null,
  finish_reason: message.response_metadata.finish_reason ?? null,
  fingerprint: message.response_metadata.system_fingerprint ?? null,
});

// One streamed call: LangChain's chunks, concatenated into one message.
async function stream(model, messages) {
  let message = null;
  let chunks = 0;
  for await (const chunk of await model.stream(messages)) {
    message = message === null ? chunk : message.concat(chunk);
    chunks += 1;
  }
  return { seen: { ...surfaced(message), chunks }, message };
}

// The openai SDK's API error LangChain raised, or the error of its own it
// raised in its place (a `ContextOverflowError` for an overflow), the API
// error as its cause: the name raised, and the API error's fields.
const apiErrorOf = (raised) => [raised, raised?.cause].find((error) => typeof error?.status === "number");
const errorOf = (raised, error) => ({
  name: raised.name, status: error.status, message: error.error?.message ?? error.message,
  code: error.code ?? null, type: error.type ?? null,
});

// The call as a case: what it surfaced, or the error it raised.
async function attempt(call) {
  try {
    return await call();
  } catch (raised) {
    const error = apiErrorOf(raised);
    if (error === undefined) throw raised;
    return { error: errorOf(raised, error) };
  }
}

const system = new SystemMessage(SYSTEM);
emit("text", (await stream(chat(), [system, new HumanMessage("Say hello.")])).seen);
emit("reasoning", (await stream(chat(), [system, new HumanMessage("What is 6 times 7?")])).seen);

// LangChain's own message replayed, as an agent loop does: the streamed
// message (its reasoning in `additional_kwargs`), then the calls' results.
const withTools = chat().bindTools(TOOLS);
const question = new HumanMessage("Weather in Paris and Rome?");
const calls = await stream(withTools, [system, question]);
emit("tool_calls", calls.seen);
const replayed = calls.message;
const results = calls.seen.calls.map((call) => new ToolMessage({ tool_call_id: call.id, content: "18 C, sunny" }));
emit("tool_results", await attempt(async () =>
  (await stream(withTools, [system, question, replayed, ...results])).seen));

const whole = await chat().invoke([system, new HumanMessage("Answer without streaming.")]);
emit("non_streaming", surfaced(whole));

const started = performance.now();
const waited = await stream(chat(), [system, new HumanMessage("Rate limited?")]);
emit("rate_limit", { elapsed_ms: Math.round(performance.now() - started), ...waited.seen });

for (const [testCase, content, fields] of [
  ["overflow", "Too long", { model: "dshc-small-window", maxTokens: 100 }],
  ["max_tokens", "Too many tokens", { maxTokens: 2_000_000 }],
  ["exhausted", "Unscripted", {}],
]) {
  emit(testCase, await attempt(async () => {
    await chat(fields).invoke([system, new HumanMessage(content)]);
    return { error: null };
  }));
}
