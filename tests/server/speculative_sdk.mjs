// Speculative decoding through the official OpenAI Node SDK: the same greedy requests against a
// plain server and servers drafting with the MTP module (NEXTN) and with prompt lookup (NGRAM)
// must give the same text, streamed and not, 16 at a time; seeded sampled requests too (the
// verification samples each emitted token once from the target's distribution with the
// request's random stream, docs/speculative.md).
// Usage: node speculative_sdk.mjs MODEL NAME=BASE_URL...   (the first is the plain server)
import OpenAI from 'openai';
import assert from 'node:assert/strict';

const [model, ...servers] = process.argv.slice(2);
const clients = servers.map((s) => {
  const [name, baseURL] = s.split('=');
  return { name, client: new OpenAI({ apiKey: 'none', baseURL }) };
});

// Prompts of mixed lengths; the repeated ones give prompt lookup something to copy.
const words = ['alpha', 'river', 'stone', 'seven', 'light', 'north', 'paper', 'green'];
const prompts = [];
for (let i = 0; i < 16; ++i) {
  const n = 1 + ((i * 7) % 40);
  let text = '';
  for (let j = 0; j < n; ++j) text += `${words[(i * 3 + j * (i % 3 + 1)) % words.length]} `;
  if (i % 4 === 0) text = `${text}${text}${text}`;
  prompts.push(text.trim());
}

async function complete(client, prompt, i, stream, sampled) {
  const req = {
    model, prompt, max_tokens: 8 + (i % 5) * 6, stream,
    temperature: sampled ? 0.8 : 0, ...(sampled ? { seed: 100 + i, top_p: 0.95 } : {}),
  };
  if (!stream) {
    const r = await client.completions.create(req);
    return { text: r.choices[0].text, usage: r.usage.completion_tokens };
  }
  let text = '';
  for await (const chunk of await client.completions.create(req)) {
    text += chunk.choices[0]?.text ?? '';
  }
  return { text, usage: null };
}

// Stop strings cut every server's output at the same place: a stop taken from inside the plain
// server's own greedy reply (the text, finish reason and token count must agree).
async function stopped(client, prompt, i, stop) {
  const r = await client.completions.create({ model, prompt, max_tokens: 30, temperature: 0, stop });
  return { text: r.choices[0].text, finish: r.choices[0].finish_reason,
    usage: r.usage.completion_tokens };
}

let n_stops = 0;
const plainFull = await Promise.all(prompts.map((p) => clients[0].client.completions.create(
  { model, prompt: p, max_tokens: 30, temperature: 0 })));
for (let i = 0; i < prompts.length; ++i) {
  const text = plainFull[i].choices[0].text;
  if (text.length < 12) continue;
  const stop = [text.slice(8, 11)];
  const rs = await Promise.all(clients.map(({ client }) => stopped(client, prompts[i], i, stop)));
  assert.equal(rs[0].finish, 'stop');
  for (let s = 1; s < clients.length; ++s) assert.deepEqual(rs[s], rs[0], `stop on prompt ${i}`);
  ++n_stops;
}
assert.ok(n_stops >= 8, `only ${n_stops} replies long enough for a stop string`);
console.log(`ok   ${n_stops} greedy completions cut by a stop string equal on every server`);

for (const sampled of [false, true]) {
  for (const stream of [false, true]) {
    const results = await Promise.all(clients.map(({ client }) =>
      Promise.all(prompts.map((p, i) => complete(client, p, i, stream, sampled)))));
    for (let s = 1; s < clients.length; ++s) {
      for (let i = 0; i < prompts.length; ++i) {
        assert.equal(results[s][i].text, results[0][i].text,
          `${clients[s].name} differs from ${clients[0].name} on prompt ${i} ` +
          `(sampled ${sampled}, stream ${stream})`);
        if (!stream) assert.equal(results[s][i].usage, results[0][i].usage);
      }
    }
    console.log(`ok   ${prompts.length} ${sampled ? 'seeded sampled' : 'greedy'} completions ` +
      `(stream ${stream}) equal on ${clients.map((c) => c.name).join(', ')}`);
  }
}
