// End-to-end test of `dsserve serve` through the official OpenAI Node SDK (npm `openai`).
// Usage: node e2e_sdk.mjs BASE_URL API_KEY MODEL_NAME
// The served model has random weights: checks are about protocol, framing, counts and the
// equality of streamed and non-streamed results, never about text quality.
import OpenAI from 'openai';
import assert from 'node:assert/strict';

const [baseURL, apiKey, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60_000 });
let nChecks = 0;
async function check(name, fn) {
  const t0 = Date.now();
  await fn();
  ++nChecks;
  console.log(`ok   ${name} (${Date.now() - t0} ms)`);
}

const user = (text) => [{ role: 'user', content: text }];
const longPrompt = 'Describe the history of the printing press in great detail. '.repeat(24);
const tools = [{
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
}];

// Folds a chat stream into {choices: [{content, reasoning, tool_calls, finish_reason, logprobs}], usage}.
async function collectChat(stream) {
  const out = { choices: [], usage: null, nChunks: 0, ids: new Set() };
  for await (const chunk of stream) {
    ++out.nChunks;
    out.ids.add(chunk.id);
    assert.equal(chunk.object, 'chat.completion.chunk');
    if (chunk.usage) out.usage = chunk.usage;
    for (const ch of chunk.choices) {
      const c = (out.choices[ch.index] ??= {
        content: '', reasoning: '', tool_calls: [], finish_reason: null, logprobs: [], token_ids: [],
      });
      assert.equal(c.finish_reason, null, 'no chunk after a finish_reason');
      const d = ch.delta ?? {};
      if (d.content) c.content += d.content;
      if (d.reasoning_content) c.reasoning += d.reasoning_content;
      for (const tc of d.tool_calls ?? []) {
        const t = (c.tool_calls[tc.index] ??= { id: '', name: '', arguments: '' });
        if (tc.id) t.id = tc.id;
        if (tc.function?.name) t.name += tc.function.name;
        if (tc.function?.arguments) t.arguments += tc.function.arguments;
      }
      if (ch.logprobs?.content) c.logprobs.push(...ch.logprobs.content);
      if (ch.token_ids) c.token_ids.push(...ch.token_ids);
      if (ch.finish_reason) c.finish_reason = ch.finish_reason;
    }
  }
  return out;
}

await check('models.list', async () => {
  const models = await client.models.list();
  assert.deepEqual(models.data.map((m) => m.id), [model]);
});

await check('chat non-stream', async () => {
  const r = await client.chat.completions.create({
    model, messages: user('Hello!'), max_tokens: 8, seed: 1,
  });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.ok(['length', 'stop'].includes(r.choices[0].finish_reason));
  assert.ok(r.usage.prompt_tokens > 0);
  assert.ok(r.usage.completion_tokens >= 1 && r.usage.completion_tokens <= 8);
  if (r.choices[0].finish_reason === 'length') assert.equal(r.usage.completion_tokens, 8);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  assert.equal(typeof r.usage.prompt_tokens_details.cached_tokens, 'number');
});

await check('chat stream with include_usage', async () => {
  const s = await client.chat.completions.create({
    model, messages: user('Hello!'), max_tokens: 8, seed: 1, stream: true,
    stream_options: { include_usage: true },
  });
  const r = await collectChat(s);
  assert.equal(r.ids.size, 1, 'one id per stream');
  assert.equal(r.choices.length, 1);
  assert.ok(r.choices[0].finish_reason);
  assert.ok(r.usage && r.usage.completion_tokens >= 1);
});

// Same seeded request, streamed and not: identical text, tool calls and usage. A first run
// warms the prefix cache so that both measured runs see the same cached_tokens.
for (const withTools of [false, true]) {
  await check(`stream == non-stream (tools: ${withTools})`, async () => {
    const req = {
      model, messages: user(longPrompt + ' and more'), max_tokens: 24, seed: 42, temperature: 1.0,
      ...(withTools ? { tools, tool_choice: 'auto' } : {}),
    };
    await client.chat.completions.create(req);
    const full = await client.chat.completions.create(req);
    const s = await collectChat(await client.chat.completions.create({
      ...req, stream: true, stream_options: { include_usage: true },
    }));
    const m = full.choices[0].message;
    assert.equal(s.choices[0].content, m.content ?? '');
    assert.equal(s.choices[0].reasoning, m.reasoning_content ?? '');
    assert.deepEqual(s.choices[0].tool_calls,
      (m.tool_calls ?? []).map((t) => ({ id: t.id, name: t.function.name, arguments: t.function.arguments })));
    assert.equal(s.choices[0].finish_reason, full.choices[0].finish_reason);
    assert.deepEqual(s.usage, full.usage);
  });
}

await check('stop string: output cut before it, finish_reason stop, stream == non-stream', async () => {
  const base = { model, messages: user('Say something long'), max_tokens: 24, seed: 21, ignore_eos: true };
  const free = (await client.chat.completions.create(base)).choices[0].message.content;
  // A stop string taken from the middle of the unconstrained output (first occurrence).
  const chars = [...free];
  let stop = null, cut = -1;
  for (let i = Math.floor(chars.length / 2); i < chars.length - 1 && stop === null; ++i) {
    const cand = chars.slice(i, i + 2).join('');
    const at = free.indexOf(cand);
    if (cand.trim().length === 2 && at > 0) { stop = cand; cut = at; }
  }
  assert.ok(stop, `no usable stop string in ${JSON.stringify(free)}`);
  const r = await client.chat.completions.create({ ...base, stop: [stop] });
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.equal(r.choices[0].message.content, free.slice(0, cut));
  assert.ok(r.usage.completion_tokens < 24);
  const s = await collectChat(await client.chat.completions.create({
    ...base, stop: [stop], stream: true, stream_options: { include_usage: true },
  }));
  assert.equal(s.choices[0].content, r.choices[0].message.content);
  assert.equal(s.choices[0].finish_reason, 'stop');
  assert.deepEqual(s.usage, r.usage);
});

await check('usage: cached tokens on a repeated prompt', async () => {
  const req = { model, messages: user(longPrompt + ' once more'), max_tokens: 4, seed: 3 };
  const a = await client.chat.completions.create(req);
  const b = await client.chat.completions.create(req);
  assert.ok(a.usage.prompt_tokens > 128, `prompt has ${a.usage.prompt_tokens} tokens`);
  assert.equal(b.usage.prompt_tokens, a.usage.prompt_tokens);
  assert.ok(b.usage.prompt_tokens_details.cached_tokens > 0, 'second run hits the prefix cache');
  assert.ok(b.usage.prompt_tokens_details.cached_tokens < b.usage.prompt_tokens);
});

await check('n=2 (non-stream and stream)', async () => {
  const req = { model, messages: user('Two answers please'), max_tokens: 6, seed: 7, n: 2, return_token_ids: true };
  const r = await client.chat.completions.create(req);
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1]);
  assert.equal(r.usage.completion_tokens, r.choices[0].token_ids.length + r.choices[1].token_ids.length);
  assert.notDeepEqual(r.choices[0].token_ids, r.choices[1].token_ids, 'seed + i per choice');
  const s = await collectChat(await client.chat.completions.create({ ...req, stream: true,
    stream_options: { include_usage: true } }));
  assert.equal(s.choices.length, 2);
  assert.equal(s.choices[0].content, r.choices[0].message.content);
  assert.equal(s.choices[1].content, r.choices[1].message.content);
  assert.deepEqual(s.usage, r.usage);
});

await check('logprobs + top_logprobs (non-stream and stream)', async () => {
  const req = { model, messages: user('Log me'), max_tokens: 5, seed: 5, logprobs: true, top_logprobs: 3 };
  const r = await client.chat.completions.create(req);
  const lp = r.choices[0].logprobs.content;
  assert.equal(lp.length, r.usage.completion_tokens);
  for (const e of lp) {
    assert.ok(e.logprob <= 0);
    assert.equal(e.top_logprobs.length, 3);
    assert.ok(Array.isArray(e.bytes));
    assert.ok(e.top_logprobs[0].logprob >= e.logprob - 1e-5);
  }
  const s = await collectChat(await client.chat.completions.create({ ...req, stream: true }));
  assert.deepEqual(s.choices[0].logprobs, lp);
});

await check('return_token_ids', async () => {
  const r = await client.chat.completions.create({
    model, messages: user('ids'), max_tokens: 5, seed: 9, return_token_ids: true,
  });
  assert.equal(r.prompt_token_ids.length, r.usage.prompt_tokens);
  assert.equal(r.choices[0].token_ids.length, r.usage.completion_tokens);
  const s = await collectChat(await client.chat.completions.create({
    model, messages: user('ids'), max_tokens: 5, seed: 9, return_token_ids: true, stream: true,
  }));
  assert.deepEqual(s.choices[0].token_ids, r.choices[0].token_ids);
});

await check('tools: tool_choice none/auto/required/named accepted, streamed', async () => {
  for (const tool_choice of ['none', 'auto', 'required', { type: 'function', function: { name: 'get_weather' } }]) {
    const s = await collectChat(await client.chat.completions.create({
      model, messages: user('Weather in Paris?'), tools, tool_choice, max_tokens: 6, seed: 11, stream: true,
    }));
    assert.ok(['stop', 'length', 'tool_calls'].includes(s.choices[0].finish_reason));
  }
  await assert.rejects(client.chat.completions.create({
    model, messages: user('x'), tools, tool_choice: { type: 'function', function: { name: 'nope' } },
  }), (e) => e.status === 400 && e.param === 'tool_choice.function.name');
});

await check('thinking via chat_template_kwargs', async () => {
  const r = await client.chat.completions.create({
    model, messages: user('Think'), max_tokens: 4, seed: 1, chat_template_kwargs: { thinking: true },
  });
  assert.ok(r.choices[0].message);
});

await check('completions: text and token-id prompts, stream', async () => {
  const a = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 6, seed: 2 });
  assert.equal(a.object, 'text_completion');
  assert.equal(typeof a.choices[0].text, 'string');
  const b = await client.completions.create({
    model, prompt: [0, 100, 200, 300], max_tokens: 6, seed: 2, return_token_ids: true, logprobs: 2,
  });
  assert.equal(b.usage.prompt_tokens, 4);
  assert.deepEqual(b.choices[0].prompt_token_ids, [0, 100, 200, 300]);
  assert.equal(b.choices[0].logprobs.tokens.length, b.usage.completion_tokens);
  let text = '';
  let finish = null;
  for await (const c of await client.completions.create({
    model, prompt: 'Once upon a time', max_tokens: 6, seed: 2, stream: true,
  })) {
    text += c.choices[0]?.text ?? '';
    finish = c.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(text, a.choices[0].text);
  assert.equal(finish, a.choices[0].finish_reason);
});

await check('errors through the SDK: 400 names the field, 401, 404 model', async () => {
  await assert.rejects(client.chat.completions.create({ model, messages: user('x'), temperature: -1 }),
    (e) => e.status === 400 && e.param === 'temperature' && /temperature/.test(e.message));
  await assert.rejects(client.chat.completions.create({ model, messages: [{ role: 'wizard', content: 'x' }] }),
    (e) => e.status === 400 && /messages\[0\]/.test(e.message));
  await assert.rejects(client.chat.completions.create({ model: 'no-such-model', messages: user('x') }),
    (e) => e.status === 404);
  const bad = new OpenAI({ baseURL, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(bad.models.list(), (e) => e.status === 401);
});

console.log(`e2e_sdk: ${nChecks} checks passed`);
