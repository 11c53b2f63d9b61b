// Structured output through the official OpenAI Node SDK (npm `openai`) against `dsserve serve`
// on a random-weight model: its unconstrained output is noise, so only the constraint can make
// the replies valid. Every reply that finishes with "stop" must validate; a reply cut by
// max_tokens ("length") is counted and must stay rare. Streamed and non-streamed replies to the
// same seeded request must be the same text.
// Usage: node structured_output_sdk.mjs BASE_URL MODEL SCHEMA_DIR
import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { chatBoth as chatBothWith, validator } from './structured_lib.mjs';

const [baseURL, model, schemaDir] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: 'none', maxRetries: 0, timeout: 120_000 });
const user = (text) => [{ role: 'user', content: text }];
let nChecks = 0;
async function check(name, fn) {
  const t0 = Date.now();
  await fn();
  ++nChecks;
  console.log(`ok   ${name} (${Date.now() - t0} ms)`);
}

// Runs thunks with at most `width` in flight (the engine batches them).
async function pool(thunks, width = 8) {
  const out = new Array(thunks.length);
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < thunks.length) {
      const i = next++;
      out[i] = await thunks[i]();
    }
  }));
  return out;
}

// A chat request, non-streamed and streamed: {content, finish_reason} of each.
const chatBoth = (req) => chatBothWith(client, req);

// Tallies of replies: terminated ("stop") and valid among them, cut by max_tokens ("length").
const tally = { stop: 0, valid: 0, length: 0 };
function judge(what, reply, error) {
  if (reply.finish_reason === 'length') {
    ++tally.length;
    console.log(`     cut by max_tokens: ${what} (${reply.content.length} chars)`);
    return;
  }
  assert.equal(reply.finish_reason, 'stop', `${what}: finish_reason`);
  ++tally.stop;
  assert.equal(error, null, `${what}: ${JSON.stringify(reply.content)}: ${error}`);
  ++tally.valid;
}

const temperatures = [[0, 1], [0.7, 2], [1.2, 3]];  // [temperature, seed]

// --- JSON Schema response_format, over a dozen schemas of the grammar corpus that bound their
// documents (a random model almost never closes an unbounded string: 19_formats_email_uuid's
// email runs to max_tokens)
const schemaFiles = [
  '01_simple_object', '03_nested_arrays', '04_enum_mixed', '05_const', '07_any_of',
  '10_ref_defs', '16_integer_ranges', '18_formats_date_time', '20_prefix_items',
  '22_min_max_items', '25_tool_call', '28_unicode_enum_and_keys',
];
await check(`json_schema: ${schemaFiles.length} schemas x 3 temperatures, stream == non-stream, ajv`, async () => {
  const jobs = [];
  for (const name of schemaFiles) {
    const schema = JSON.parse(fs.readFileSync(path.join(schemaDir, `${name}.json`), 'utf8'));
    const valid = validator(schema);
    for (const [temperature, seed] of temperatures) {
      jobs.push(async () => {
        const r = await chatBoth({
          model, messages: user(`Reply with JSON (${name}).`), max_tokens: 400, temperature, seed,
          response_format: { type: 'json_schema', json_schema: { name: 'reply', schema, strict: true } },
        });
        const what = `${name} T=${temperature}`;
        assert.equal(r.stream.content, r.full.content, `${what}: stream != non-stream`);
        assert.equal(r.stream.finish_reason, r.full.finish_reason, `${what}: finish_reason`);
        judge(what, r.full, valid(r.full.content));
      });
    }
  }
  await pool(jobs);
});

// json_object bounds nothing: the random model's replies run to max_tokens (kept short here).
// A reply that stops must parse as an object; a cut one must at least open one.
await check('json_object (response_format and structured_outputs), stream == non-stream', async () => {
  const valid = validator({ type: 'object' });
  let nStop = 0;
  await pool([1, 2, 3, 4].map((seed) => async () => {
    const fmt = seed % 2 ? { response_format: { type: 'json_object' } }
      : { structured_outputs: { json_object: true } };
    const r = await chatBoth({ model, messages: user('Any JSON object'), max_tokens: 48, seed, ...fmt });
    assert.equal(r.stream.content, r.full.content);
    assert.ok(r.full.content.startsWith('{'), r.full.content);
    if (r.full.finish_reason === 'stop') {
      ++nStop;
      assert.equal(valid(r.full.content), null, r.full.content);
    }
  }));
  console.log(`     json_object: ${nStop}/4 finished with stop (the rest cut by max_tokens)`);
});

// --- regular expressions: SGLang's top-level `regex` (chat) and vLLM's structured_outputs.regex
// (completions); judged by JavaScript's RegExp over the whole output.
const regexes = [
  '[a-z]{3}-[0-9]{2,4}',
  '(yes|no|maybe)',
  '\\d{4}-\\d{2}-\\d{2}',
  '[A-Z][a-z]{0,8}( [A-Z][a-z]{0,8}){0,2}',
  '[a-z0-9.]{1,10}@[a-z]{1,8}\\.(com|org)',
  '(0|[1-9][0-9]{0,5})(\\.[0-9]{1,3})?',
];
await check(`regex: ${regexes.length} patterns, chat + completions, stream == non-stream, RegExp`, async () => {
  const jobs = [];
  for (const pattern of regexes) {
    const re = new RegExp(`^(?:${pattern})$`);
    const judgeRe = (what, reply) => judge(what, reply, re.test(reply.content) ? null : `no match for /${pattern}/`);
    for (const [temperature, seed] of temperatures) {
      jobs.push(async () => {
        const r = await chatBoth({ model, messages: user('Match it'), max_tokens: 64, temperature, seed, regex: pattern });
        assert.equal(r.stream.content, r.full.content);
        judgeRe(`regex ${pattern} T=${temperature}`, r.full);
      });
    }
    jobs.push(async () => {
      const c = await client.completions.create({
        model, prompt: 'Answer:', max_tokens: 64, seed: 5, structured_outputs: { regex: pattern },
      });
      judgeRe(`completions regex ${pattern}`, { content: c.choices[0].text, finish_reason: c.choices[0].finish_reason });
    });
  }
  await pool(jobs);
});

await check('choice (structured_outputs.choice), n = 2 choices each constrained', async () => {
  const choices = ['alpha', 'beta', 'gamma delta', 'épsilon ☃'];
  for (const seed of [1, 2, 3]) {
    const r = await client.chat.completions.create({
      model, messages: user('Pick one'), max_tokens: 16, seed, n: 2, structured_outputs: { choice: choices },
    });
    assert.equal(r.choices.length, 2);
    for (const c of r.choices) {
      assert.equal(c.finish_reason, 'stop');
      assert.ok(choices.includes(c.message.content), `not a choice: ${JSON.stringify(c.message.content)}`);
    }
    const s = await chatBoth({ model, messages: user('Pick one'), max_tokens: 16, seed, structured_outputs: { choice: choices } });
    assert.equal(s.stream.content, s.full.content);
    assert.ok(choices.includes(s.full.content));
  }
});

// --- GBNF: SGLang's `ebnf` and vLLM's structured_outputs.grammar; each grammar is regular, so
// a RegExp written by hand from it is the judge.
const grammars = [
  {
    gbnf: 'root ::= "(" item ("," item){0,3} ")"\nitem ::= [a-z]{1,5} | [0-9]{1,3}',
    re: /^\((?:[a-z]{1,5}|[0-9]{1,3})(?:,(?:[a-z]{1,5}|[0-9]{1,3})){0,3}\)$/,
  },
  {
    gbnf: 'root ::= greeting " " name "!"\ngreeting ::= "hello" | "hi" | "hey"\nname ::= [A-Z] [a-z]{1,6}',
    re: /^(?:hello|hi|hey) [A-Z][a-z]{1,6}!$/,
  },
];
await check('ebnf / structured_outputs.grammar (GBNF), stream == non-stream, RegExp', async () => {
  const jobs = [];
  for (const g of grammars) {
    for (const [temperature, seed] of temperatures) {
      for (const field of ['ebnf', 'structured_outputs']) {
        jobs.push(async () => {
          const extra = field === 'ebnf' ? { ebnf: g.gbnf } : { structured_outputs: { grammar: g.gbnf } };
          const r = await chatBoth({ model, messages: user('Grammar'), max_tokens: 64, temperature, seed, ...extra });
          assert.equal(r.stream.content, r.full.content);
          judge(`${field} ${g.re} T=${temperature}`, r.full, g.re.test(r.full.content) ? null : `no match for ${g.re}`);
        });
      }
    }
  }
  await pool(jobs);
});

// The SDK's own structured-output helper: a zod schema turned into a strict json_schema
// response_format by zodResponseFormat, and `chat.completions.parse`, which parses the reply
// with that zod schema (it throws on a reply zod rejects) into `message.parsed`. The schema
// bounds every value, so the random model's replies terminate.
await check('SDK helper: chat.completions.parse + zodResponseFormat returns a parsed object', async () => {
  const Forecast = z.object({
    city: z.enum(['Paris', 'Tokyo', 'Lima']),
    days: z.number().int().min(1).max(14),
    tags: z.array(z.string().max(6)).max(3),
    note: z.string().max(8).nullable(),
    ok: z.boolean(),
  });
  const responseFormat = zodResponseFormat(Forecast, 'forecast');
  // zod emits a draft-07 schema ("$schema" names it); ajv judges it under 2020-12, which reads
  // these keywords the same way.
  const { $schema, ...ajvSchema } = responseFormat.json_schema.schema;
  assert.match($schema, /draft-07/);
  const valid = validator(ajvSchema);
  let nParsed = 0;
  for (const [temperature, seed] of temperatures) {
    const r = await client.chat.completions.parse({
      model, messages: user('Forecast as JSON'), max_tokens: 400, temperature, seed,
      response_format: responseFormat,
    });
    const m = r.choices[0];
    const what = `zod T=${temperature}`;
    judge(what, { content: m.message.content ?? '', finish_reason: m.finish_reason }, valid(m.message.content ?? ''));
    if (m.finish_reason !== 'stop') continue;
    // parsed is the zod-parsed object, equal to the JSON text it came from.
    assert.equal(typeof m.message.parsed, 'object', what);
    assert.notEqual(m.message.parsed, null, what);
    assert.deepEqual(m.message.parsed, Forecast.parse(JSON.parse(m.message.content)), what);
    assert.ok(['Paris', 'Tokyo', 'Lima'].includes(m.message.parsed.city), what);
    assert.ok(Number.isInteger(m.message.parsed.days), what);
    ++nParsed;
  }
  assert.ok(nParsed >= 2, `only ${nParsed}/3 parse() replies finished with stop`);
  console.log(`     parse(): ${nParsed}/3 replies parsed by zod`);
});

await check('json_schema on /v1/completions (stream == non-stream)', async () => {
  const schema = JSON.parse(fs.readFileSync(path.join(schemaDir, '01_simple_object.json'), 'utf8'));
  const valid = validator(schema);
  for (const seed of [4, 5]) {
    const req = {
      model, prompt: 'JSON:', max_tokens: 200, seed,
      response_format: { type: 'json_schema', json_schema: { name: 'p', schema } },
    };
    const full = await client.completions.create(req);
    let text = '', finish = null;
    for await (const chunk of await client.completions.create({ ...req, stream: true })) {
      text += chunk.choices[0]?.text ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    assert.equal(text, full.choices[0].text);
    assert.equal(finish, full.choices[0].finish_reason);
    judge(`completions json_schema seed ${seed}`, { content: text, finish_reason: finish }, valid(text));
  }
});

await check('response_format text is a no-op; thinking on: the grammar waits for </think>', async () => {
  const r = await client.chat.completions.create({
    model, messages: user('Hello'), max_tokens: 4, seed: 1, response_format: { type: 'text' },
  });
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  // The random model never closes its reasoning: the reply is all reasoning, cut by max_tokens,
  // and not forced into JSON (the constraint applies to the content after </think>).
  const t = await client.chat.completions.create({
    model, messages: user('Think, then JSON'), max_tokens: 12, seed: 2,
    chat_template_kwargs: { thinking: true }, response_format: { type: 'json_object' },
  });
  assert.equal(t.choices[0].finish_reason, 'length');
  assert.ok(t.choices[0].message.reasoning_content.length > 0);
});

await check('400s name the field and the unsupported keyword or construct', async () => {
  const bad = async (extra, param, ...words) => {
    await assert.rejects(
      client.chat.completions.create({ model, messages: user('x'), max_tokens: 4, ...extra }),
      (e) => {
        assert.equal(e.status, 400, e.message);
        assert.equal(e.param, param, e.message);
        for (const w of words) assert.ok(e.message.includes(w), `${e.message} lacks ${w}`);
        return true;
      });
  };
  const schemaFormat = (schema) => ({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema } } });
  await bad(schemaFormat({ type: 'object', minProperties: 2 }), 'response_format.json_schema.schema', 'minProperties');
  await bad(schemaFormat({ type: 'object', properties: { a: { type: 'string', not: { const: 'x' } } } }),
    'response_format.json_schema.schema', "'not'", '#/properties/a');
  await bad({ structured_outputs: { json: { type: 'array', uniqueItems: true } } }, 'structured_outputs.json', 'uniqueItems');
  await bad({ regex: '(ab' }, 'regex');
  await bad({ regex: '(a)\\1' }, 'regex', 'backreference');
  await bad({ structured_outputs: { regex: '(?<=a)b' } }, 'structured_outputs.regex');
  await bad({ ebnf: 'root ::= undefined_rule' }, 'ebnf', 'undefined_rule');
  await bad({ structured_outputs: { choice: [] } }, 'structured_outputs.choice');
  await bad({ response_format: { type: 'json_schema' } }, 'response_format.json_schema');
  await bad({ response_format: { type: 'yaml' } }, 'response_format.type', 'yaml');
  await bad({ response_format: { type: 'json_object' }, regex: 'a' }, 'response_format', 'regex', 'at most one');
});

await check('metrics: grammar masks counted', async () => {
  const text = await (await fetch(baseURL.replace(/\/v1$/, '/metrics'))).text();
  const masks = Number(/^dsserve:grammar_masks_total (\S+)$/m.exec(text)[1]);
  const secs = Number(/^dsserve:grammar_mask_seconds_total (\S+)$/m.exec(text)[1]);
  assert.ok(masks > 0);
  console.log(`     ${masks} masks, mean ${(1e6 * secs / masks).toFixed(1)} us per mask (engine thread)`);
});

const total = tally.stop + tally.length;
console.log(`replies: ${total}; finished with stop: ${tally.stop}, valid: ${tally.valid}/${tally.stop}; ` +
  `cut by max_tokens: ${tally.length}`);
assert.equal(tally.valid, tally.stop);
assert.ok(tally.stop >= 0.9 * total, 'most constrained replies must terminate');
console.log(`structured_output_sdk: ${nChecks} checks passed`);
