// Drives a realtime session through a sluice gateway for
// gateway/realtime_node_test.go, with one of two official clients: the
// `openai` package's WebSocket client (openai/realtime/ws, on the `ws`
// package) or the Agents SDK's RealtimeSession (@openai/agents-realtime,
// text only). It asks one question and prints, as one JSON line, the
// answer's text and the server events the client saw. It asserts nothing
// itself; the Go test does.
//
//   {"client": "openai" | "agents", "baseURL": "https://127.0.0.1:port/v1" (openai),
//    "url": "ws://127.0.0.1:port/v1/realtime?model=..." (agents), "apiKey": ...,
//    "model": ..., "question": ...}
'use strict';

const spec = JSON.parse(process.argv[2]);

function out(v) {
  process.stdout.write(JSON.stringify(v) + '\n');
}

function withTimeout(p, ms, what) {
  return Promise.race([p, new Promise((_, reject) => setTimeout(() => reject(new Error(what + ': timed out')), ms))]);
}

async function viaOpenAI() {
  const { default: OpenAI } = require('openai');
  const { OpenAIRealtimeWS } = require('openai/realtime/ws');
  const client = new OpenAI({ apiKey: spec.apiKey, baseURL: spec.baseURL, maxRetries: 0 });
  const rt = new OpenAIRealtimeWS({ model: spec.model }, client);
  const events = [];
  let requestID = '';
  rt.socket.on('upgrade', (res) => { requestID = res.headers['x-request-id'] || ''; });
  const text = await withTimeout(new Promise((resolve, reject) => {
    let answer = '';
    rt.on('error', (err) => reject(err));
    rt.on('event', (ev) => {
      events.push(ev.type);
      if (ev.type === 'response.output_text.done') answer = ev.text;
      if (ev.type === 'response.done') resolve(answer);
    });
    rt.socket.on('open', () => {
      rt.send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: spec.question }] } });
      rt.send({ type: 'response.create' });
    });
  }), 20000, 'openai realtime');
  const closed = new Promise((resolve) => rt.socket.on('close', (code) => resolve(code)));
  rt.close({ code: 1000, reason: 'done' });
  const closeCode = await withTimeout(closed, 10000, 'close');
  return { text, events, requestID, closeCode };
}

async function viaAgents() {
  const { RealtimeAgent, RealtimeSession } = require('@openai/agents-realtime');
  const agent = new RealtimeAgent({ name: 'Assistant', instructions: 'Answer briefly.' });
  const session = new RealtimeSession(agent, { transport: 'websocket', model: spec.model, config: { outputModalities: ['text'] } });
  const events = [];
  let answer = '';
  const done = new Promise((resolve, reject) => {
    session.on('error', (e) => reject(new Error(JSON.stringify(e.error ?? e))));
    session.on('transport_event', (ev) => {
      events.push(ev.type);
      if (ev.type === 'response.output_text.done') answer = ev.text;
      if (ev.type === 'response.done') resolve();
    });
  });
  await withTimeout(session.connect({ apiKey: spec.apiKey, url: spec.url }), 20000, 'agents connect');
  session.sendMessage(spec.question);
  await withTimeout(done, 20000, 'agents answer');
  session.close();
  return { text: answer, events };
}

(async () => {
  try {
    out(spec.client === 'agents' ? await viaAgents() : await viaOpenAI());
    process.exit(0);
  } catch (err) {
    out({ error: { message: String(err && err.message ? err.message : err) } });
    process.exit(0);
  }
})();
