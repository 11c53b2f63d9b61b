// Decode throughput with and without a JSON Schema constraint on one running `dsserve serve`
// (issue #38; a measurement, not a test). Each round sends CONCURRENCY (16) chat requests at
// once, non-streamed, and counts usage.completion_tokens over the round's wall time. Rounds
// alternate between the modes (free, schema, free, schema, ...) so that load from other work on
// the machine falls on both alike.
//   free:   no constraint, ignore_eos, max_tokens = OUTPUT_LEN (every request yields OUTPUT_LEN)
//   schema: json_schema {"text": string} with maxLength far above OUTPUT_LEN: a random-weight
//           model almost never closes the string, so requests also run to OUTPUT_LEN, with a
//           mask computed at every step (the string-content states allow most of the vocabulary)
//   nested: a bounded schema of objects, enums, integers and short strings (replies end early;
//           tokens/s still counts only the tokens produced)
// Usage: node bench/grammar/structured_throughput.mjs BASE_URL MODEL
// Environment: CONCURRENCY (16), OUTPUT_LEN (128), ROUNDS (4 per mode).
import OpenAI from 'openai';

const [baseURL, model] = process.argv.slice(2);
const concurrency = Number(process.env.CONCURRENCY ?? 16);
const outputLen = Number(process.env.OUTPUT_LEN ?? 128);
const rounds = Number(process.env.ROUNDS ?? 4);
const client = new OpenAI({ baseURL, apiKey: 'none', maxRetries: 0, timeout: 600_000 });

const schemas = {
  schema: {
    type: 'object', properties: { text: { type: 'string', maxLength: 4000 } }, required: ['text'],
  },
  nested: {
    type: 'object',
    properties: {
      items: {
        type: 'array', maxItems: 6,
        items: {
          type: 'object',
          properties: {
            id: { type: 'integer', minimum: 0, maximum: 9999 },
            kind: { enum: ['alpha', 'beta', 'gamma'] },
            name: { type: 'string', maxLength: 12 },
            ok: { type: 'boolean' },
          },
          required: ['id', 'kind', 'name', 'ok'],
        },
      },
    },
    required: ['items'],
  },
};

function request(mode, i) {
  const req = {
    model, max_tokens: outputLen, temperature: 0.7, seed: i,
    messages: [{ role: 'user', content: `Write record number ${i} as JSON.` }],
  };
  if (mode === 'free') {
    req.ignore_eos = true;
  } else {
    req.response_format = { type: 'json_schema', json_schema: { name: mode, schema: schemas[mode] } };
  }
  return client.chat.completions.create(req);
}

async function round(mode, r) {
  const t0 = performance.now();
  const replies = await Promise.all(
    Array.from({ length: concurrency }, (_, i) => request(mode, 1000 * r + i)));
  const s = (performance.now() - t0) / 1000;
  const tokens = replies.reduce((n, x) => n + x.usage.completion_tokens, 0);
  const cut = replies.filter((x) => x.choices[0].finish_reason === 'length').length;
  return { s, tokens, cut };
}

const modes = ['free', 'schema', 'nested'];
const total = Object.fromEntries(modes.map((m) => [m, { s: 0, tokens: 0, cut: 0, n: 0 }]));
for (const m of modes) await round(m, 99);  // warm-up: compile the grammars, fill mask caches
for (let r = 0; r < rounds; ++r) {
  for (const m of modes) {
    const x = await round(m, r);
    const t = total[m];
    t.s += x.s;
    t.tokens += x.tokens;
    t.cut += x.cut;
    t.n += concurrency;
    console.log(`round ${r} ${m.padEnd(6)}: ${x.tokens} tokens in ${x.s.toFixed(2)} s = ` +
      `${(x.tokens / x.s).toFixed(0)} tok/s (${x.cut}/${concurrency} ran to max_tokens)`);
  }
}
const rate = (m) => total[m].tokens / total[m].s;
for (const m of modes) {
  console.log(`${m.padEnd(6)}: ${total[m].tokens} tokens / ${total[m].s.toFixed(2)} s = ` +
    `${rate(m).toFixed(1)} tok/s, ${(total[m].tokens / total[m].n).toFixed(1)} tokens per request, ` +
    `${total[m].cut}/${total[m].n} ran to max_tokens; ratio to free ${(rate(m) / rate('free')).toFixed(3)}`);
}
