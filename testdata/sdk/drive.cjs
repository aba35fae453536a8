// Drives the official Anthropic and OpenAI npm clients against a sluice
// gateway for gateway/sdk_node_test.go. It reads one call as JSON from its
// first argument and prints what the client made of the answer as one JSON
// line: the value the client returned, the events a stream delivered, or
// the error it threw (its class, status and body). It asserts nothing
// itself; the Go test does.
//
//   {"client": "anthropic" | "openai", "baseURL": ..., "apiKey" | "authToken": ...,
//    "headers": {...}, "call": "messages" | "messages.stream" | "embeddings" | "responses" | "responses.stream",
//    "params": {...}}
'use strict';

const { default: Anthropic } = require('@anthropic-ai/sdk');
const { default: OpenAI } = require('openai');

async function main() {
  const spec = JSON.parse(process.argv[2]);
  const common = { baseURL: spec.baseURL, defaultHeaders: spec.headers || {}, maxRetries: 0, timeout: 20000 };
  try {
    if (spec.client === 'anthropic') {
      const client = new Anthropic({ ...common, apiKey: spec.apiKey ?? null, authToken: spec.authToken ?? null });
      if (spec.call === 'messages') {
        const value = await client.messages.create(spec.params);
        return out({ value, requestID: value._request_id });
      }
      if (spec.call === 'messages.countTokens') {
        const value = await client.messages.countTokens(spec.params);
        return out({ value, requestID: value._request_id });
      }
      if (spec.call === 'messages.stream') {
        const stream = client.messages.stream(spec.params);
        const events = [];
        stream.on('streamEvent', (e) => events.push(e.type));
        const text = [];
        stream.on('text', (t) => text.push(t));
        const value = await stream.finalMessage();
        return out({ value, events, text: text.join(''), requestID: stream.request_id });
      }
    }
    if (spec.client === 'openai') {
      const client = new OpenAI({ ...common, apiKey: spec.apiKey });
      if (spec.call === 'responses') {
        const value = await client.responses.create(spec.params);
        return out({ value, outputText: value.output_text, requestID: value._request_id });
      }
      if (spec.call === 'responses.stream') {
        // The raw event stream, as the SDK parses it; the value is the
        // response the terminal event carries.
        const { data: stream, request_id } = await client.responses.create({ ...spec.params, stream: true }).withResponse();
        const events = [];
        let value = null;
        const text = [];
        for await (const e of stream) {
          events.push(e.type);
          if (e.type === 'response.output_text.delta') text.push(e.delta);
          if (e.type === 'response.completed' || e.type === 'response.incomplete') value = e.response;
        }
        return out({ value, events, outputText: text.join(''), requestID: request_id });
      }
      if (spec.call === 'embeddings') {
        const value = await client.embeddings.create(spec.params);
        // A float vector prints as numbers whatever the wire encoding was.
        return out({
          value: { ...value, data: value.data.map((d) => ({ ...d, embedding: Array.from(d.embedding) })) },
          requestID: value._request_id,
        });
      }
    }
    throw new Error('unknown call ' + spec.client + ' ' + spec.call);
  } catch (err) {
    out({
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
