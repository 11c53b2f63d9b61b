// Forced tool calls through the official OpenAI Node SDK against `dsserve serve` on a
// random-weight model (its unconstrained output is noise: only the grammar can make a call):
// tool_choice "required" and a named tool, in the V3, V3.1 and V3.2 (DSML) call formats (one
// server per format: --tool-call-parser). Every reply must finish with "tool_calls", each call
// must name a given tool (the named one when named) and its arguments must validate against
// that tool's parameters (ajv, independent of the grammar library); streamed and non-streamed
// replies to the same seeded request must carry the same calls.
// Usage: node tool_choice_sdk.mjs MODEL FORMAT=BASE_URL...   (e.g. v3=http://127.0.0.1:8000/v1)
import OpenAI from 'openai';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const Ajv2020 = require('ajv/dist/2020');
const addFormats = require('ajv-formats');

const [model, ...servers] = process.argv.slice(2);
const user = (text) => [{ role: 'user', content: text }];

// Tools whose arguments are bounded (a random model almost never closes an open string).
const tools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Weather for a city',
      parameters: {
        type: 'object',
        properties: {
          city: { type: 'string', maxLength: 10 },
          days: { type: 'integer', minimum: 1, maximum: 7 },
          unit: { enum: ['celsius', 'fahrenheit'] },
        },
        required: ['city', 'days'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'set_alarm',
      parameters: {
        type: 'object',
        properties: {
          time: { type: 'object', properties: { h: { type: 'integer', minimum: 0, maximum: 23 },
            m: { type: 'integer', minimum: 0, maximum: 59 } }, required: ['h', 'm'] },
          repeat: { type: 'array', items: { enum: ['mon', 'tue', 'wed'] }, maxItems: 3 },
          loud: { type: 'boolean' },
          label: { type: ['string', 'null'], maxLength: 6 },
        },
        required: ['time', 'loud'],
      },
    },
  },
  { type: 'function', function: { name: 'noop', description: 'No arguments' } },
];
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
const validators = Object.fromEntries(tools.map((t) => [t.function.name,
  ajv.compile(t.function.parameters ?? { type: 'object' })]));

function checkCalls(what, calls, only) {
  assert.ok(calls && calls.length >= 1, `${what}: no tool call`);
  for (const c of calls) {
    assert.equal(c.type, 'function', what);
    const validate = validators[c.function.name];
    assert.ok(validate, `${what}: unknown tool ${c.function.name}`);
    if (only) assert.equal(c.function.name, only, what);
    let args;
    try {
      args = JSON.parse(c.function.arguments);
    } catch (e) {
      assert.fail(`${what}: arguments not JSON: ${c.function.arguments}`);
    }
    assert.ok(validate(args), `${what}: ${c.function.arguments}: ${ajv.errorsText(validate.errors)}`);
  }
}

// The streamed reply's tool calls, assembled from the deltas as the SDK's users do.
async function streamedCalls(client, req) {
  const calls = [];
  let finish = null, content = '';
  for await (const chunk of await client.chat.completions.create({ ...req, stream: true })) {
    const ch = chunk.choices[0];
    if (!ch) continue;
    if (ch.delta?.content) content += ch.delta.content;
    for (const d of ch.delta?.tool_calls ?? []) {
      calls[d.index] ??= { type: 'function', function: { name: '', arguments: '' } };
      if (d.id) calls[d.index].id = d.id;
      if (d.function?.name) calls[d.index].function.name += d.function.name;
      if (d.function?.arguments) calls[d.index].function.arguments += d.function.arguments;
    }
    if (ch.finish_reason) finish = ch.finish_reason;
  }
  return { calls, finish, content };
}

let nRequests = 0, nCalls = 0;
for (const spec of servers) {
  const [format, baseURL] = spec.split('=');
  const client = new OpenAI({ baseURL, apiKey: 'none', maxRetries: 0, timeout: 120_000 });
  const t0 = Date.now();
  const choices = [
    ['required, one call', { tool_choice: 'required', parallel_tool_calls: false }, null],
    ...tools.map((t) => [`named ${t.function.name}`,
      { tool_choice: { type: 'function', function: { name: t.function.name } } }, t.function.name]),
  ];
  const jobs = [];
  for (const [label, extra, only] of choices) {
    for (const [temperature, seed] of [[0, 1], [0.7, 2], [1.2, 3]]) {
      jobs.push((async () => {
        const what = `${format} ${label} T=${temperature}`;
        const req = { model, messages: user('Call a tool'), tools, max_tokens: 400, temperature, seed, ...extra };
        const full = await client.chat.completions.create(req);
        const m = full.choices[0];
        assert.equal(m.finish_reason, 'tool_calls', `${what}: ${JSON.stringify(m)}`);
        assert.equal(m.message.content, null, `${what}: content ${m.message.content}`);
        checkCalls(what, m.message.tool_calls, only);
        if (extra.parallel_tool_calls === false || only) assert.equal(m.message.tool_calls.length, 1, what);
        const s = await streamedCalls(client, req);
        assert.equal(s.finish, 'tool_calls', what);
        assert.equal(s.content, '', what);
        assert.deepEqual(s.calls.map((c) => [c.function.name, c.function.arguments]),
          m.message.tool_calls.map((c) => [c.function.name, c.function.arguments]), `${what}: stream != non-stream`);
        nRequests += 2;
        nCalls += m.message.tool_calls.length;
      })());
    }
  }
  // "required" with parallel calls allowed: one or more calls; a reply cut by max_tokens is
  // counted (the random model may keep calling), any that finishes must validate.
  let cut = 0;
  for (const seed of [4, 5, 6]) {
    jobs.push((async () => {
      const r = await client.chat.completions.create({
        model, messages: user('Call tools'), tools, tool_choice: 'required', max_tokens: 600, seed, temperature: 0.7,
      });
      ++nRequests;
      const m = r.choices[0];
      if (m.finish_reason === 'length') { ++cut; return; }
      assert.equal(m.finish_reason, 'tool_calls');
      checkCalls(`${format} required (parallel) seed ${seed}`, m.message.tool_calls, null);
      nCalls += m.message.tool_calls.length;
    })());
  }
  await Promise.all(jobs);
  console.log(`ok   ${format}: ${jobs.length} forced requests (+ streamed twins), ${cut}/3 parallel ones cut by max_tokens (${Date.now() - t0} ms)`);

  // Strict tools under tool_choice auto: the random model rarely opens a call block on its own,
  // so this checks that such requests are served (the grammar waits behind the block's marker)
  // and that any call it does make validates; the gate itself is tested in the engine and unit
  // tests.
  const strictTools = tools.map((t) => ({ ...t, function: { ...t.function, strict: true } }));
  for (const seed of [7, 8]) {
    const r = await client.chat.completions.create({
      model, messages: user('Maybe call a tool'), tools: strictTools, max_tokens: 24, seed, temperature: 1.0,
    });
    const m = r.choices[0];
    assert.ok(['stop', 'length', 'tool_calls'].includes(m.finish_reason), m.finish_reason);
    if (m.finish_reason === 'tool_calls') checkCalls(`${format} strict auto`, m.message.tool_calls, null);
  }

  // Errors name the field.
  const bad = async (extra, param, word) => {
    await assert.rejects(client.chat.completions.create({ model, messages: user('x'), max_tokens: 4, ...extra }),
      (e) => {
        assert.equal(e.status, 400, e.message);
        assert.equal(e.param, param, e.message);
        assert.ok(e.message.includes(word), `${e.message} lacks ${word}`);
        return true;
      });
  };
  await bad({ tools, tool_choice: { type: 'function', function: { name: 'nope' } } }, 'tool_choice.function.name', 'nope');
  await bad({ tools, tool_choice: 'required', response_format: { type: 'json_object' } }, 'tool_choice', 'response_format');
  await bad({
    tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: { type: 'string', not: {} } } } } }],
    tool_choice: 'required',
  }, format === 'v32' ? 'tools[0].function.parameters.properties.a' : 'tools[0].function.parameters', "'not'");
  if (format === 'v32') {
    await bad({
      tools: [{ type: 'function', function: { name: 'f', parameters: { anyOf: [{ type: 'object' }] } } }],
      tool_choice: 'required',
    }, 'tools[0].function.parameters', 'anyOf');
  }
  console.log(`ok   ${format}: 400s name the field`);
}
console.log(`tool_choice_sdk: all passed (${nRequests} requests, ${nCalls} calls validated)`);
