// What every Node driver's session shares: the model, the system prompt and
// the one tool that clients/session.toml is scripted for, and the JSON-line
// output. Each driver wraps the tool in its own client's format.
export const MODEL = "deepseek-v4-flash";
export const SYSTEM =
  "You are a weather assistant for travellers. Answer in one short sentence. " +
  "Use the get_weather tool for every city the user names, one call per city, " +
  "and never guess a forecast. If a city is ambiguous, ask which one is meant. " +
  "Report temperatures in Celsius and mention rain when the forecast has any.";
export const WEATHER_TOOL = {
  name: "get_weather",
  description: "The current weather of one city.",
  parameters: {
    type: "object",
    properties: { city: { type: "string", description: "City name" } },
    required: ["city"],
  },
};
/** The same tool as the OpenAI-style `tools` list carries it. */
export const OPENAI_TOOLS = [{ type: "function", function: WEATHER_TOOL }];

/** Print one case: what the client surfaced, as one JSON line. */
export const emit = (testCase, fields) => console.log(JSON.stringify({ case: testCase, ...fields }));
