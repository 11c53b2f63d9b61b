// Structured-output acceptance run (issue #38), not part of `make test` (a few minutes): every
// JSON Schema of the grammar corpus, at temperatures 0, 0.7 and 1.2 and several seeds, as a
// json_schema response_format through the official OpenAI Node SDK against `dsserve serve` on a
// random-weight model (whose unconstrained output is noise: only the constraint makes replies
// valid). Each (schema, seed, temperature) is sent non-streamed and streamed.
//
// Fails (exit 1) unless:
// - every reply that finishes with "stop" parses as JSON and validates under ajv (draft 2020-12
//   + ajv-formats, the judge of tests/grammar), 100%;
// - the streamed reply equals the non-streamed one (content and finish_reason);
// - no reply to a bounded schema is cut by max_tokens. A schema is bounded when every document
//   it allows is short (enums, integers, strings with maxLength or a fixed format, arrays with
//   maxItems, no extra properties, no recursion): BOUNDED_MAX_TOKENS always suffices for them.
//   Replies to unbounded schemas (free strings, numbers, email, extra properties, recursion) get
//   UNBOUNDED_MAX_TOKENS; those cut by it must be a prefix of a JSON document (jsonPrefix:
//   completed by closing what is open, JSON.parse accepts it; not schema-checked).
// Prints one summary line: requests, schemas, stop / valid / length counts, wall time.
//
// Usage: node structured_output_acceptance.mjs BASE_URL MODEL SCHEMA_DIR
// Environment: ACCEPT_SEEDS (seeds per schema and temperature, default 2), ACCEPT_CONCURRENCY
// (requests in flight, default 16), BOUNDED_MAX_TOKENS (1024), UNBOUNDED_MAX_TOKENS (256).
import OpenAI from 'openai';
import fs from 'node:fs';
import path from 'node:path';
import { chatBoth as chatBothWith, validator } from './structured_lib.mjs';

// Whether `text` can be completed into JSON that JSON.parse accepts (the judge of replies cut by
// max_tokens; independent of the grammar library): close an open string, finish a partial
// literal, number, escape or key, then close the open arrays and objects.
function jsonPrefix(text) {
  const stack = [];
  let inStr = false, esc = false;
  for (const ch of text) {
    if (inStr) {
      if (esc) esc = false;
      else if (ch === '\\') esc = true;
      else if (ch === '"') inStr = false;
    } else if (ch === '"') {
      inStr = true;
    } else if (ch === '{' || ch === '[') {
      stack.push(ch === '{' ? '}' : ']');
    } else if (ch === '}' || ch === ']') {
      if (stack.pop() !== ch) return false;
    }
  }
  const closers = stack.reverse().join('');
  const inString = inStr ? (esc ? ['n"', 'u0000"'] : ['"', '0000"', '000"', '00"', '0"']) : [''];
  const fills = ['', '0', '"":0', ':0', 'null', 'ull', 'll', 'l', 'true', 'rue', 'ue', 'e',
    'false', 'alse', 'lse', 'se', '"x":0', '0}', ']'];
  for (const a of inString) {
    for (const f of fills) {
      for (const tail of ['', ':0']) {
        try {
          JSON.parse(text + a + tail + f + closers);
          return true;
        } catch { /* try the next completion */ }
      }
    }
  }
  return false;
}

const [baseURL, model, schemaDir] = process.argv.slice(2);
if (!schemaDir) {
  console.error('usage: node structured_output_acceptance.mjs BASE_URL MODEL SCHEMA_DIR');
  process.exit(2);
}
const env = (name, dflt) => Number(process.env[name] ?? dflt);
const nSeeds = env('ACCEPT_SEEDS', 2);
const width = env('ACCEPT_CONCURRENCY', 16);
const boundedMaxTokens = env('BOUNDED_MAX_TOKENS', 1024);
const unboundedMaxTokens = env('UNBOUNDED_MAX_TOKENS', 256);
const temperatures = [0, 0.7, 1.2];

const client = new OpenAI({ baseURL, apiKey: 'none', maxRetries: 0, timeout: 600_000 });

// --- Is every document of the schema short? Mirrors what src/grammar/json_schema.cc generates:
// strict objects (no additionalProperties = none allowed), integers of at most 15 digits,
// numbers with unbounded fractions, formats date/time/date-time/uuid of fixed length and email
// unbounded, a pattern bounded only when anchored at both ends and free of * + {n,}.
function resolvePointer(root, ref) {
  let at = root;
  for (const raw of ref.slice(1).split('/').slice(1)) {
    const tok = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    at = at[tok];
  }
  return at;
}

function boundedPattern(p) {
  if (!p.startsWith('^') || !p.endsWith('$') || p.endsWith('\\$')) return false;
  return !/(^|[^\\])[*+]|\{\d+,\}/.test(p);
}

function isBounded(root, s, refs = new Set()) {
  if (s === true || s === undefined) return false;  // any JSON value
  if (s === false) return true;
  if (typeof s !== 'object') return true;
  if ('$ref' in s) {
    if (refs.has(s.$ref)) return false;  // recursion: nesting depth is unbounded
    const next = new Set(refs).add(s.$ref);
    return isBounded(root, resolvePointer(root, s.$ref), next);
  }
  if ('enum' in s || 'const' in s) return true;
  if ('allOf' in s) {
    const { allOf, ...rest } = s;
    const members = allOf.map((m) => ('$ref' in m ? resolvePointer(root, m.$ref) : m));
    return [rest, ...members].every((m) =>
      Object.values(m.properties ?? {}).every((p) => isBounded(root, p, refs)));
  }
  for (const key of ['anyOf', 'oneOf']) {
    if (key in s) return s[key].every((b) => isBounded(root, b, refs));
  }
  let types = s.type === undefined ? [] : [s.type].flat();
  if (s.type === undefined) {
    const has = (keys) => keys.some((k) => k in s);
    if (has(['properties', 'required', 'additionalProperties'])) types.push('object');
    if (has(['items', 'prefixItems', 'minItems', 'maxItems'])) types.push('array');
    if (has(['minLength', 'maxLength', 'pattern', 'format'])) types.push('string');
    if (has(['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'])) types.push('integer');
    if (types.length === 0) return false;  // any JSON value
  }
  return types.every((t) => {
    switch (t) {
      case 'null': case 'boolean': case 'integer':
        return true;
      case 'number':
        return false;
      case 'string':
        if ('maxLength' in s) return true;
        if ('format' in s) return ['date', 'time', 'date-time', 'uuid'].includes(s.format);
        if ('pattern' in s) return boundedPattern(s.pattern);
        return false;
      case 'object':
        if ('additionalProperties' in s && s.additionalProperties !== false) return false;
        return Object.values(s.properties ?? {}).every((p) => isBounded(root, p, refs));
      case 'array': {
        const prefix = s.prefixItems ?? [];
        if (!prefix.every((p) => isBounded(root, p, refs))) return false;
        const items = 'items' in s ? s.items : (prefix.length ? false : true);
        if (items === false || s.maxItems <= prefix.length) return true;
        return 'maxItems' in s && isBounded(root, items, refs);
      }
      default:
        return false;
    }
  });
}

// --- requests
async function pool(thunks) {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < thunks.length) await thunks[next++]();
  }));
}

const chatBoth = (req) => chatBothWith(client, req);

const files = fs.readdirSync(schemaDir).filter((f) => f.endsWith('.json')).sort();
const schemas = files.map((f) => {
  const schema = JSON.parse(fs.readFileSync(path.join(schemaDir, f), 'utf8'));
  const bounded = isBounded(schema, schema);
  return { name: f.replace(/\.json$/, ''), schema, valid: validator(schema), bounded };
});
console.log(`${schemas.length} schemas (${schemas.filter((s) => s.bounded).length} bounded): ` +
  `unbounded ${schemas.filter((s) => !s.bounded).map((s) => s.name).join(', ')}`);

const t = { requests: 0, replies: 0, stop: 0, valid: 0, length: 0, lengthBounded: 0, prefixOk: 0, tokens: 0 };
const failures = [];
const perSchema = new Map(schemas.map((s) => [s.name, { stop: 0, length: 0 }]));
const jobs = [];
for (const s of schemas) {
  for (const temperature of temperatures) {
    for (let k = 0; k < nSeeds; ++k) {
      const seed = 1 + k;
      jobs.push(async () => {
        const what = `${s.name} T=${temperature} seed=${seed}`;
        let r;
        try {
          r = await chatBoth({
            model, max_tokens: s.bounded ? boundedMaxTokens : unboundedMaxTokens, temperature, seed,
            // The seed is also in the prompt so that greedy (T=0) replies differ across seeds.
            messages: [{ role: 'user', content: `Reply with JSON for ${s.name}, case ${seed}.` }],
            response_format: { type: 'json_schema', json_schema: { name: 'reply', schema: s.schema, strict: true } },
          });
        } catch (e) {
          failures.push(`${what}: request failed: ${e.message}`);
          return;
        }
        ++t.requests;
        t.replies += 2;
        t.tokens += r.tokens;
        if (r.stream.content !== r.full.content || r.stream.finish_reason !== r.full.finish_reason) {
          failures.push(`${what}: stream != non-stream: ${JSON.stringify(r.stream)} vs ${JSON.stringify(r.full)}`);
        }
        const tally = perSchema.get(s.name);
        for (const reply of [r.full, r.stream]) {
          if (reply.finish_reason === 'length') {
            ++t.length;
            ++tally.length;
            if (s.bounded) {
              ++t.lengthBounded;
              failures.push(`${what}: bounded schema cut by max_tokens: ${JSON.stringify(reply.content)}`);
            } else if (!jsonPrefix(reply.content)) {
              failures.push(`${what}: cut reply is not a prefix of a JSON document: ${JSON.stringify(reply.content)}`);
            } else {
              ++t.prefixOk;
            }
            continue;
          }
          if (reply.finish_reason !== 'stop') {
            failures.push(`${what}: finish_reason ${reply.finish_reason}`);
            continue;
          }
          ++t.stop;
          ++tally.stop;
          const err = s.valid(reply.content);
          if (err === null) {
            ++t.valid;
          } else {
            failures.push(`${what}: invalid ${JSON.stringify(reply.content)}: ${err}`);
          }
        }
      });
    }
  }
}

const t0 = Date.now();
await pool(jobs);
const wall = (Date.now() - t0) / 1000;

for (const s of schemas) {
  const c = perSchema.get(s.name);
  if (c.length > 0) console.log(`     ${s.name} (${s.bounded ? 'bounded' : 'unbounded'}): ${c.stop} stop, ${c.length} cut by max_tokens`);
}
for (const f of failures.slice(0, 50)) console.log(`FAIL ${f}`);
if (failures.length > 50) console.log(`FAIL ... ${failures.length - 50} more`);
console.log(`structured_output_acceptance: ${t.requests} requests (x2: non-streamed + streamed = ` +
  `${t.replies} replies) over ${schemas.length} schemas x ${temperatures.length} temperatures x ` +
  `${nSeeds} seeds; stop ${t.stop}, valid ${t.valid}/${t.stop}; cut by max_tokens ${t.length} ` +
  `(bounded schemas: ${t.lengthBounded}; JSON prefixes ${t.prefixOk}/${t.length - t.lengthBounded}); ` +
  `${t.tokens} completion tokens (non-streamed); ` +
  `wall ${wall.toFixed(1)} s; failures ${failures.length}`);
const ok = failures.length === 0 && t.valid === t.stop && schemas.length >= 60 && t.requests >= 300;
process.exit(ok ? 0 : 1);
