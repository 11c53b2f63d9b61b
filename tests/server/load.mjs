// Load test of `dsserve serve` through the OpenAI Node SDK: N concurrent streaming chat requests
// on loopback, D of which disconnect after their first content chunk. Checks: every kept stream
// completes with a finish_reason and usage and no error; the server counts the D disconnects as
// aborted requests; afterwards nothing runs or waits and every KV page not held by the prefix
// cache is free again (from /metrics). Writes a /metrics scrape taken under load to SCRAPE_FILE.
// Usage: node load.mjs BASE_URL N D SCRAPE_FILE
import OpenAI from 'openai';
import assert from 'node:assert/strict';
import fs from 'node:fs';

const [baseURL, nArg, dArg, scrapeFile] = process.argv.slice(2);
const N = Number(nArg), D = Number(dArg);
const root = baseURL.replace(/\/v1$/, '');
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0, timeout: 120_000 });

async function metrics() {
  const text = await (await fetch(`${root}/metrics`)).text();
  const m = {};
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    m[line.slice(0, i)] = Number(line.slice(i + 1));
  }
  return { text, m };
}

const before = (await metrics()).m;
const abortedBefore = before['dsserve:request_success_total{finished_reason="abort"}'] ?? 0;
const t0 = Date.now();
let nStarted = 0;
async function one(i) {
  const disconnect = i % Math.floor(N / D) === 0 && i / Math.floor(N / D) < D;
  const ac = new AbortController();
  const stream = await client.chat.completions.create({
    model: undefined,
    messages: [{ role: 'user', content: `Request number ${i % 17}: tell me a story.` }],
    max_tokens: disconnect ? 400 : 12, ignore_eos: true, seed: i, stream: true,
    stream_options: { include_usage: true },
  }, { signal: ac.signal });
  ++nStarted;
  let content = 0, finish = null, usage = null;
  try {
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      const c = chunk.choices[0];
      if (c?.delta?.content) ++content;
      if (c?.finish_reason) finish = c.finish_reason;
      if (disconnect && content >= 1) { ac.abort(); break; }
    }
  } catch (e) {
    if (!disconnect) throw e;
  }
  if (disconnect) return 'disconnected';
  assert.equal(finish, 'length', `request ${i}: finish_reason`);
  assert.equal(usage?.completion_tokens, 12, `request ${i}: usage`);
  return 'done';
}

const all = Array.from({ length: N }, (_, i) => one(i));
// Scrape under load, once the streams are open.
while (nStarted < N / 2) await new Promise((r) => setTimeout(r, 20));
const underLoad = await metrics();
fs.writeFileSync(scrapeFile, underLoad.text);
const results = await Promise.all(all);
const nDone = results.filter((r) => r === 'done').length;
const nDisc = results.filter((r) => r === 'disconnected').length;
assert.equal(nDone, N - D);
assert.equal(nDisc, D);
console.log(`ok   ${N} concurrent streams: ${nDone} complete, ${nDisc} disconnected, ${Date.now() - t0} ms` +
  ` (under load: running=${underLoad.m['dsserve:num_requests_running']}, waiting=${underLoad.m['dsserve:num_requests_waiting']},` +
  ` kv=${underLoad.m['dsserve:kv_cache_usage_perc']}, busy=${underLoad.m['dsserve:engine_busy_ratio']})`);

// The server notices disconnects asynchronously: wait until everything is idle.
let m;
for (let k = 0; ; ++k) {
  m = (await metrics()).m;
  if (m['dsserve:num_requests_running'] === 0 && m['dsserve:num_requests_waiting'] === 0 &&
      m['dsserve:num_streams_open'] === 0) break;
  assert.ok(k < 500, 'server did not become idle within 10 s: ' + JSON.stringify(m));
  await new Promise((r) => setTimeout(r, 20));
}
const aborted = m['dsserve:request_success_total{finished_reason="abort"}'] - abortedBefore;
assert.equal(aborted, D, 'each disconnect cancels its engine request');
assert.equal(m['dsserve:kv_cache_pages_used'], m['dsserve:kv_cache_pages_cached'],
  'every page not held by the prefix cache is free again');
assert.ok(m['dsserve:kv_cache_num_pages'] > 0);
console.log(`ok   idle afterwards: ${aborted} aborted, KV pages used ${m['dsserve:kv_cache_pages_used']} = ` +
  `prefix-cached ${m['dsserve:kv_cache_pages_cached']} of ${m['dsserve:kv_cache_num_pages']}`);
