// Soak test of `dsserve serve` through the OpenAI Node SDK (not part of `make test`; run by
// soak_test.sh / `make soak`). SOAK_CONCURRENCY clients stay busy for SOAK_SECONDS on loopback.
// Each client loops, picking a kind with its own seeded RNG:
//   60% stream    chat or completions stream that must finish: a finish_reason, usage, [DONE]
//   30% drop      stream (ignore_eos) abandoned after 1-5 token chunks (AbortController)
//   10% leave     non-stream request abandoned 50-500 ms after it was sent, before its response
//                 (one whose response arrives first is checked like a normal request)
// Counts per kind: completed, aborted (intentional), errors (any failure not caused by our own
// abort: HTTP error, an error event, a missing finish_reason / usage / [DONE], a timeout, ...).
// TTFT (request sent -> first token text) of the completed streams: p50/p90/p99/max.
// RSS: periodic samples written by soak_test.sh to SOAK_RSS_FILE ("epoch_ms kB" lines), plus this
// script's own reads of /proc/SOAK_SERVER_PID/status at the start (after the warm-up), at the end
// of the load and once idle. Growth = end of load vs the sample at minute 2 (runs >= 300 s) or
// at 20% of the run (shorter runs: reported, and a failure only with SOAK_RSS_STRICT=1).
// After the load: /metrics is polled for up to 10 s until nothing runs, waits or streams and every
// KV page not held by the prefix cache is free again.
// Prints a table and the JSON report, writes the JSON to SOAK_REPORT; exit 1 when a check fails.
// Usage: node soak.mjs BASE_URL
import OpenAI from 'openai';
import fs from 'node:fs';

const env = (k, d) => (process.env[k] === undefined || process.env[k] === '' ? d : process.env[k]);
const baseURL = process.argv[2];
if (!baseURL) throw new Error('usage: node soak.mjs BASE_URL');
const root = baseURL.replace(/\/v1\/?$/, '');
const SECONDS = Number(env('SOAK_SECONDS', 600));
const CONCURRENCY = Number(env('SOAK_CONCURRENCY', 1000));
const SEED = Number(env('SOAK_SEED', 1));
const REPORT = env('SOAK_REPORT', 'build/soak-report.json');
const SERVER_PID = env('SOAK_SERVER_PID', '');
const RSS_FILE = env('SOAK_RSS_FILE', '');
const RSS_LIMIT_PCT = Number(env('SOAK_RSS_LIMIT_PCT', 5));
const RSS_STRICT = env('SOAK_RSS_STRICT', SECONDS >= 300 ? '1' : '0') === '1';
const PROGRESS_S = Number(env('SOAK_PROGRESS_SECONDS', 10));
// Generous: with 1000 clients and the default 32-request batch most requests wait in the queue;
// the soak is about correctness and leaks under churn, not latency (TTFT is reported).
const REQUEST_TIMEOUT_MS = Number(env('SOAK_REQUEST_TIMEOUT_MS', 600_000));
// After SOAK_SECONDS no request starts; those in flight may take up to the request timeout.
const DRAIN_MS = Number(env('SOAK_DRAIN_SECONDS', REQUEST_TIMEOUT_MS / 1000 + 30)) * 1000;
const IDLE_WAIT_MS = 10_000;

// ---- SSE [DONE] detection ---------------------------------------------------------------------
// The SDK swallows `data: [DONE]` and ends the iteration the same way whether or not it came, so a
// fetch wrapper watches the raw body of each streamed response. Requests are tagged with a header.
const doneSeen = new Map();  // tag -> boolean
let nextTag = 0;
async function soakFetch(url, init) {
  const res = await fetch(url, init);
  const tag = new Headers(init?.headers).get('x-soak-tag');
  if (tag === null || !doneSeen.has(tag) || !res.body) return res;
  let tail = '';
  const dec = new TextDecoder();
  const watch = new TransformStream({
    transform(chunk, ctl) {
      tail = (tail + dec.decode(chunk, { stream: true })).slice(-64);
      if (/(^|\n)data: ?\[DONE\]/.test(tail)) doneSeen.set(tag, true);
      ctl.enqueue(chunk);
    },
  });
  return new Response(res.body.pipeThrough(watch), {
    status: res.status, statusText: res.statusText, headers: res.headers,
  });
}
// Node's fetch (undici) pools connections per origin without a limit, so CONCURRENCY sockets open.
const client = new OpenAI({
  baseURL, apiKey: 'unused', maxRetries: 0, timeout: REQUEST_TIMEOUT_MS, fetch: soakFetch,
});

// ---- helpers ------------------------------------------------------------------------------------
function mulberry32(a) {
  return () => {
    a |= 0; a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const randInt = (rng, lo, hi) => lo + Math.floor(rng() * (hi - lo + 1));  // [lo, hi]
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const WORDS = ('the quick brown fox jumps over a lazy dog while seven wizards quietly hex every ' +
  'bold zebra near old stone bridges in winter rain story history river mountain city engine ' +
  'paper light signal garden ocean market').split(' ');
function prompt(rng) {
  // A few shared openings (prefix-cache hits) followed by a random tail.
  const openings = ['Tell me a story about', 'Explain in detail', 'Summarise the history of',
    'Write a poem on', 'List facts about'];
  const n = randInt(rng, 3, 60);
  const w = Array.from({ length: n }, () => WORDS[randInt(rng, 0, WORDS.length - 1)]);
  return `${openings[randInt(rng, 0, openings.length - 1)]} ${w.join(' ')}.`;
}
function pct(sorted, p) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}
async function metrics() {
  const text = await (await fetch(`${root}/metrics`)).text();
  const m = {};
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    m[line.slice(0, i)] = Number(line.slice(i + 1));
  }
  return m;
}
function rssKb() {
  if (!SERVER_PID) return null;
  try {
    const s = fs.readFileSync(`/proc/${SERVER_PID}/status`, 'utf8');
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(s);
    return m ? Number(m[1]) : null;
  } catch { return null; }
}
const isAbort = (e) => e?.name === 'AbortError' || e?.constructor?.name === 'APIUserAbortError' ||
  /abort/i.test(String(e?.message ?? ''));

// ---- per-kind state -----------------------------------------------------------------------------
const KINDS = ['stream', 'drop', 'leave'];
const stats = Object.fromEntries(KINDS.map((k) => [k, {
  started: 0, completed: 0, aborted: 0, errors: 0, completion_tokens: 0,
}]));
const ttftMs = [];            // completed streams
const errorMessages = new Map();  // message -> count
let inFlight = 0;
function recordError(kind, i, e) {
  ++stats[kind].errors;
  const msg = `${kind}: ${e?.status ? `HTTP ${e.status} ` : ''}${String(e?.message ?? e).slice(0, 200)}`;
  errorMessages.set(msg, (errorMessages.get(msg) ?? 0) + 1);
  if (stats.stream.errors + stats.drop.errors + stats.leave.errors <= 5)
    console.error(`error (client ${i}): ${msg}`);
}
function check(cond, msg) { if (!cond) throw new Error(msg); }

// Folds one streamed choice; returns {finish, nText, usage}.
function foldChunk(st, chunk, endpoint) {
  if (chunk.usage) st.usage = chunk.usage;
  const c = chunk.choices?.[0];
  if (!c) return;
  check(st.finish === null, 'chunk after a finish_reason');
  const text = endpoint === 'chat'
    ? (c.delta?.content ?? '') + (c.delta?.reasoning_content ?? '')
    : (c.text ?? '');
  if (text.length > 0) {
    if (st.nText === 0) st.firstMs = Date.now();
    ++st.nText;
  }
  if (c.finish_reason) st.finish = c.finish_reason;
}

function request(rng, endpoint, maxTokens, extra) {
  const common = { model: MODEL, max_tokens: maxTokens, seed: randInt(rng, 0, 1 << 30), ...extra };
  if (rng() < 0.5) common.temperature = 0; else { common.temperature = 0.8; common.top_p = 0.95; }
  return endpoint === 'chat'
    ? { ...common, messages: [{ role: 'user', content: prompt(rng) }] }
    : { ...common, prompt: prompt(rng) };
}
const create = (endpoint, body, opts) => (endpoint === 'chat'
  ? client.chat.completions.create(body, opts) : client.completions.create(body, opts));

async function runStream(rng, i, kind) {
  const endpoint = rng() < 0.5 ? 'chat' : 'completions';
  const drop = kind === 'drop';
  const maxTokens = drop ? randInt(rng, 32, 128) : randInt(rng, 16, 64);
  const dropAfter = randInt(rng, 1, 5);
  const body = request(rng, endpoint, maxTokens,
    { stream: true, stream_options: { include_usage: true }, ...(drop ? { ignore_eos: true } : {}) });
  const tag = String(nextTag++);
  doneSeen.set(tag, false);
  const ac = new AbortController();
  const st = { finish: null, nText: 0, usage: null, firstMs: 0 };
  const t0 = Date.now();
  let dropped = false;
  try {
    const stream = await create(endpoint, body, { signal: ac.signal, headers: { 'x-soak-tag': tag } });
    for await (const chunk of stream) {
      foldChunk(st, chunk, endpoint);
      if (drop && st.nText >= dropAfter && st.finish === null) { dropped = true; ac.abort(); break; }
    }
    if (dropped) { ++stats[kind].aborted; return; }
    check(st.finish === 'length' || st.finish === 'stop', `finish_reason ${st.finish}`);
    check(doneSeen.get(tag), 'no data: [DONE]');
    check(st.usage, 'no usage chunk');
    const n = st.usage.completion_tokens;
    check(n >= 1 && n <= maxTokens && (st.finish !== 'length' || n === maxTokens),
      `usage.completion_tokens ${n}, max_tokens ${maxTokens}, finish ${st.finish}`);
    ++stats[kind].completed;
    stats[kind].completion_tokens += n;
    if (kind === 'stream' && st.nText > 0) ttftMs.push(st.firstMs - t0);
  } catch (e) {
    if (dropped && isAbort(e)) { ++stats[kind].aborted; return; }
    recordError(kind, i, e);
  } finally {
    doneSeen.delete(tag);
  }
}

async function runLeave(rng, i) {
  const endpoint = rng() < 0.5 ? 'chat' : 'completions';
  // Modest max_tokens: an abandoned non-stream request may run to max_tokens on the server.
  const maxTokens = randInt(rng, 8, 48);
  const leaveMs = randInt(rng, 50, 500);
  const body = request(rng, endpoint, maxTokens, {});
  const ac = new AbortController();
  let left = false;
  const timer = setTimeout(() => { left = true; ac.abort(); }, leaveMs);
  try {
    const r = await create(endpoint, body, { signal: ac.signal });
    clearTimeout(timer);
    const c = r.choices?.[0];
    check(c && (c.finish_reason === 'length' || c.finish_reason === 'stop'),
      `finish_reason ${c?.finish_reason}`);
    const n = r.usage?.completion_tokens;
    check(n >= 1 && n <= maxTokens && (c.finish_reason !== 'length' || n === maxTokens),
      `usage.completion_tokens ${n}, max_tokens ${maxTokens}`);
    ++stats.leave.completed;
    stats.leave.completion_tokens += n;
  } catch (e) {
    clearTimeout(timer);
    if (left && isAbort(e)) { ++stats.leave.aborted; return; }
    recordError('leave', i, e);
  }
}

async function clientLoop(i, deadline) {
  const rng = mulberry32(SEED * 1_000_003 + i);
  await sleep(randInt(rng, 0, 2000));  // ramp up over 2 s
  while (Date.now() < deadline) {
    const r = rng();
    const kind = r < 0.6 ? 'stream' : r < 0.9 ? 'drop' : 'leave';
    ++stats[kind].started;
    ++inFlight;
    try {
      if (kind === 'leave') await runLeave(rng, i); else await runStream(rng, i, kind);
    } finally {
      --inFlight;
    }
  }
}

// ---- main ---------------------------------------------------------------------------------------
const MODEL = (await client.models.list()).data[0].id;
const m0 = await metrics();
console.log(`soak: ${CONCURRENCY} clients for ${SECONDS} s against ${baseURL} (model ${MODEL}, ` +
  `seed ${SEED}, max running ${m0['dsserve:batch_cap']}, KV pages ${m0['dsserve:kv_cache_num_pages']})`);

// Warm-up: a few of each kind, not counted (but its errors are failures).
let warmupErrors = 0;
{
  const saved = JSON.stringify(stats);
  const rng = mulberry32(SEED);
  await Promise.all(Array.from({ length: 16 }, (_, i) =>
    i % 4 === 3 ? runLeave(rng, -1) : runStream(rng, -1, i % 4 === 2 ? 'drop' : 'stream')));
  warmupErrors = KINDS.reduce((a, k) => a + stats[k].errors, 0);
  const warm = JSON.parse(saved);
  for (const k of KINDS) Object.assign(stats[k], warm[k]);
  ttftMs.length = 0;
}

const before = await metrics();
const rss = { samples: [], start_kb: rssKb(), end_kb: null, idle_kb: null };
const tStart = Date.now();
const loadSamples = [];  // every SOAK_PROGRESS_SECONDS under load: RSS next to the server's gauges
const deadline = tStart + SECONDS * 1000;
const loops = Array.from({ length: CONCURRENCY }, (_, i) => clientLoop(i, deadline));

const progress = setInterval(async () => {
  try {
    const m = await metrics();
    if (Date.now() <= deadline) {
      loadSamples.push({ t: Math.round((Date.now() - tStart) / 1000), rss_kb: rssKb(), in_flight: inFlight,
        running: m['dsserve:num_requests_running'], waiting: m['dsserve:num_requests_waiting'],
        streams: m['dsserve:num_streams_open'], kv_used: m['dsserve:kv_cache_pages_used'],
        kv_cached: m['dsserve:kv_cache_pages_cached'] });
    }
    const s = stats;
    console.log(`t=${Math.round((Date.now() - tStart) / 1000)}s in-flight ${inFlight} | ` +
      `stream ${s.stream.completed}/${s.stream.errors}e drop ${s.drop.aborted}/${s.drop.errors}e ` +
      `leave ${s.leave.aborted}+${s.leave.completed}/${s.leave.errors}e | server running ` +
      `${m['dsserve:num_requests_running']} waiting ${m['dsserve:num_requests_waiting']} streams ` +
      `${m['dsserve:num_streams_open']} kv ${(100 * m['dsserve:kv_cache_usage_perc']).toFixed(1)}% ` +
      `rss ${rssKb() ?? '?'} kB`);
  } catch (e) {
    console.log(`t=${Math.round((Date.now() - tStart) / 1000)}s /metrics failed: ${e.message}`);
  }
}, PROGRESS_S * 1000);

// Sample RSS at the deadline (still under full load), then let in-flight requests finish.
await sleep(Math.max(0, deadline - Date.now()));
rss.end_kb = rssKb();
const tLoadEnd = Date.now();
let drained = false;
await Promise.race([Promise.all(loops).then(() => { drained = true; }), sleep(DRAIN_MS)]);
clearInterval(progress);
const tDrained = Date.now();

// Idle: nothing running, waiting or streaming, and every KV page back. kv_cache_pages_used counts
// every page not free, which includes pages the prefix cache keeps for reuse after their requests
// finished (kv_cache_pages_cached, reclaimable and legitimately non-zero when idle); pages held
// by requests = used - cached, which must be 0. (kv_cache_usage_perc includes cached pages too.)
let idle = null, mEnd = null;
for (const t1 = Date.now(); ;) {
  mEnd = await metrics();
  const held = mEnd['dsserve:kv_cache_pages_used'] - mEnd['dsserve:kv_cache_pages_cached'];
  if (mEnd['dsserve:num_requests_running'] === 0 && mEnd['dsserve:num_requests_waiting'] === 0 &&
      mEnd['dsserve:num_streams_open'] === 0 && held === 0) { idle = Date.now() - tDrained; break; }
  if (Date.now() - t1 > IDLE_WAIT_MS) break;
  await sleep(100);
}
rss.idle_kb = rssKb();

// RSS samples of soak_test.sh within the load, as seconds since the start.
if (RSS_FILE && fs.existsSync(RSS_FILE)) {
  for (const line of fs.readFileSync(RSS_FILE, 'utf8').split('\n')) {
    const [ms, kb] = line.trim().split(/\s+/).map(Number);
    if (Number.isFinite(ms) && Number.isFinite(kb) && ms >= tStart && ms <= tLoadEnd)
      rss.samples.push([Math.round((ms - tStart) / 100) / 10, kb]);
  }
}
const baseAt = SECONDS >= 300 ? 120 : 0.2 * SECONDS;
const base = rss.samples.find(([t]) => t >= baseAt);
rss.baseline_at_s = base ? base[0] : null;
rss.baseline_kb = base ? base[1] : null;
rss.max_kb = Math.max(...rss.samples.map(([, kb]) => kb), rss.start_kb ?? 0, rss.end_kb ?? 0);
rss.growth_pct = base && rss.end_kb
  ? Math.round(10000 * (rss.end_kb - base[1]) / base[1]) / 100 : null;
rss.strict = RSS_STRICT;

const sorted = [...ttftMs].sort((a, b) => a - b);
const d = (k) => (mEnd[k] ?? 0) - (before[k] ?? 0);
const nonDroppedErrors = stats.stream.errors + stats.drop.errors + stats.leave.errors;
const report = {
  config: { seconds: SECONDS, concurrency: CONCURRENCY, seed: SEED, model: MODEL, base_url: baseURL },
  warmup_errors: warmupErrors,
  elapsed_s: Math.round((tLoadEnd - tStart) / 100) / 10,
  drain_s: Math.round((tDrained - tLoadEnd) / 100) / 10,
  kinds: stats,
  totals: {
    requests: KINDS.reduce((a, k) => a + stats[k].started, 0),
    completed: KINDS.reduce((a, k) => a + stats[k].completed, 0),
    aborted: KINDS.reduce((a, k) => a + stats[k].aborted, 0),
    errors: nonDroppedErrors,
    // over the load and the drain (requests in flight at the end complete during the drain)
    completed_per_s: Math.round(10 * KINDS.reduce((a, k) => a + stats[k].completed, 0) /
      ((tDrained - tStart) / 1000)) / 10,
  },
  error_messages: Object.fromEntries([...errorMessages].sort((a, b) => b[1] - a[1]).slice(0, 20)),
  ttft_ms: { n: sorted.length, p50: pct(sorted, 50), p90: pct(sorted, 90), p99: pct(sorted, 99),
    max: sorted.at(-1) ?? null },
  rss_kb: rss,
  server: {
    finished: Object.fromEntries(['stop', 'length', 'abort', 'error', 'tool_calls'].map(
      (r) => [r, d(`dsserve:request_success_total{finished_reason="${r}"}`)])),
    http_status: Object.fromEntries(Object.keys(mEnd).filter((k) => k.startsWith('dsserve:http_requests_total'))
      .map((k) => [k.replace(/.*status="(\d+)".*/, '$1'), d(k)]).filter(([, n]) => n > 0)),
    preemptions: d('dsserve:num_preemptions_total'),
    generation_tokens: d('dsserve:generation_tokens_total'),
    // Informational: every request abandoned client-side (drop + leave) should end as an engine
    // abort; fewer means abandoned requests ran on (e.g. to max_tokens) after their client left.
    client_abandoned: stats.drop.aborted + stats.leave.aborted,
  },
  idle: {
    reached_after_ms: idle,
    running: mEnd['dsserve:num_requests_running'],
    waiting: mEnd['dsserve:num_requests_waiting'],
    streams_open: mEnd['dsserve:num_streams_open'],
    kv_pages_total: mEnd['dsserve:kv_cache_num_pages'],
    kv_pages_used: mEnd['dsserve:kv_cache_pages_used'],
    kv_pages_cached: mEnd['dsserve:kv_cache_pages_cached'],
    kv_pages_held_by_requests: mEnd['dsserve:kv_cache_pages_used'] - mEnd['dsserve:kv_cache_pages_cached'],
  },
  load_samples: loadSamples,
  failures: [],
};
const f = report.failures;
if (nonDroppedErrors > 0) f.push(`${nonDroppedErrors} errors among non-dropped requests`);
if (warmupErrors > 0) f.push(`${warmupErrors} errors during the warm-up`);
if (!drained) f.push(`${inFlight} requests still in flight ${DRAIN_MS / 1000} s after the end`);
if (idle === null)
  f.push(`not idle ${IDLE_WAIT_MS / 1000} s after the load: running ${report.idle.running}, waiting ` +
    `${report.idle.waiting}, streams ${report.idle.streams_open}, pages held by requests ` +
    `${report.idle.kv_pages_held_by_requests}`);
if (report.server.finished.error > 0) f.push(`server finished ${report.server.finished.error} requests with error`);
if (report.totals.requests === 0 || stats.stream.completed === 0) f.push('no stream completed');
if (rss.growth_pct === null) {
  if (RSS_STRICT) f.push('RSS growth not measured (no samples: SOAK_SERVER_PID / SOAK_RSS_FILE)');
} else if (rss.growth_pct >= RSS_LIMIT_PCT && RSS_STRICT) {
  f.push(`RSS grew ${rss.growth_pct}% (>= ${RSS_LIMIT_PCT}%) from t=${rss.baseline_at_s}s to the end`);
}
report.ok = f.length === 0;

// ---- output -------------------------------------------------------------------------------------
fs.mkdirSync(REPORT.replace(/\/[^/]*$/, '') || '.', { recursive: true });
fs.writeFileSync(REPORT, JSON.stringify(report, null, 2) + '\n');
const pad = (s, n) => String(s).padStart(n);
const mb = (kb) => (kb == null ? '?' : (kb / 1024).toFixed(1));
console.log(JSON.stringify(report));
console.log(`\nkind      started completed  aborted   errors`);
for (const k of KINDS) {
  const s = stats[k];
  console.log(`${k.padEnd(8)}${pad(s.started, 9)}${pad(s.completed, 10)}${pad(s.aborted, 9)}${pad(s.errors, 9)}`);
}
const t = report.totals;
console.log(`${'total'.padEnd(8)}${pad(t.requests, 9)}${pad(t.completed, 10)}${pad(t.aborted, 9)}${pad(t.errors, 9)}`);
console.log(`TTFT ms (completed streams, n=${sorted.length}): p50 ${report.ttft_ms.p50} p90 ` +
  `${report.ttft_ms.p90} p99 ${report.ttft_ms.p99} max ${report.ttft_ms.max}`);
console.log(`RSS MB: start ${mb(rss.start_kb)}, t=${rss.baseline_at_s}s ${mb(rss.baseline_kb)}, end ` +
  `${mb(rss.end_kb)}, idle ${mb(rss.idle_kb)}, max under load ${mb(rss.max_kb)}; growth ${rss.growth_pct}%` +
  `${RSS_STRICT ? '' : ' (informational: run < 300 s)'}`);
console.log(`server: finished ${JSON.stringify(report.server.finished)}, http ${JSON.stringify(report.server.http_status)}, ` +
  `preemptions ${report.server.preemptions}`);
console.log(`abandoned by clients ${report.server.client_abandoned} (drop ${stats.drop.aborted}, leave ` +
  `${stats.leave.aborted}), cancelled by the server (finished abort) ${report.server.finished.abort}`);
console.log(`idle after ${idle ?? '-'} ms: running ${report.idle.running}, waiting ${report.idle.waiting}, ` +
  `streams ${report.idle.streams_open}, KV pages used ${report.idle.kv_pages_used} = cached ` +
  `${report.idle.kv_pages_cached} + held ${report.idle.kv_pages_held_by_requests} (of ${report.idle.kv_pages_total})`);
console.log(`report: ${REPORT}`);
for (const msg of f) console.log(`FAIL: ${msg}`);
console.log(report.ok ? 'soak: ok' : 'soak: FAILED');
process.exit(report.ok ? 0 : 1);
