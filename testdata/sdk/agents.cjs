// Runs one OpenAI Agents SDK (@openai/agents) agent against a sluice gateway
// for gateway/agents_node_test.go. It reads the run as JSON from its first
// argument, gives the agent one function tool that answers with a fixed
// string, and prints one JSON line: the run's final output, the tools the
// agent called, and the request id of every model call; or the error the
// run threw, and then it exits 1. It asserts nothing itself; the Go test
// does.
//
//   {"baseURL": ".../v1", "apiKey": ..., "model": ..., "prompt": ...,
//    "tool": {"name": ..., "description": ..., "result": ...}}
//
// The client is the SDK's own copy of openai (it depends on a newer major
// version than the one testdata/sdk pins for drive.cjs), without retries, so
// that one model call is one request to the gateway. Tracing is off: it
// would upload spans to the platform's trace endpoint.
'use strict';

const { createRequire } = require('node:module');
const { Agent, run, tool, setDefaultOpenAIClient, setTracingDisabled } = require('@openai/agents');
const { z } = require('zod');

const { default: OpenAI } = createRequire(require.resolve('@openai/agents-openai'))('openai');

async function main() {
  const spec = JSON.parse(process.argv[2]);
  setTracingDisabled(true);
  setDefaultOpenAIClient(new OpenAI({ baseURL: spec.baseURL, apiKey: spec.apiKey, maxRetries: 0, timeout: 30000 }));
  const called = [];
  const fn = tool({
    name: spec.tool.name,
    description: spec.tool.description,
    parameters: z.object({ city: z.string() }),
    execute: async (args) => {
      called.push({ name: spec.tool.name, args });
      return spec.tool.result;
    },
  });
  const agent = new Agent({
    name: 'sluice-test',
    instructions: 'Answer with what the tool returns.',
    model: spec.model,
    tools: [fn],
  });
  try {
    const result = await run(agent, spec.prompt, { maxTurns: 4 });
    out({
      finalOutput: result.finalOutput,
      called,
      requestIDs: result.rawResponses.map((r) => r.requestId ?? null),
    });
  } catch (err) {
    process.exitCode = 1;
    out({
      called,
      error: {
        class: err && err.constructor ? err.constructor.name : typeof err,
        status: err.status ?? null,
        body: err.error ?? null,
        requestID: err.requestID ?? null,
        message: String(err.message || err),
      },
    });
  }
}

function out(v) {
  process.stdout.write(JSON.stringify(v) + '\n');
}

main();
