// Builds the tokenizer test corpus (deterministic: fixed seed, no inputs besides this file) and
// writes, for every string, the ids and decoded text that Hugging Face `tokenizers` produces.
// Usage: node gen_tokenizer_data.js TOKENIZER_DIR OUT_DIR   (run through scripts/gen_tokenizer_data)
// Output: OUT_DIR/tokenizer_cases.jsonl, one JSON object per line:
//   {"cat": C, "text": S, "ids": [...], "decoded": S'}      valid UTF-8 input
//   {"cat": C, "hex": H, "ids": [...], "decoded": S'}       raw bytes (may be invalid UTF-8);
//                                                           HF sees the U+FFFD-repaired string
//   {"cat": "decode", "ids": [...], "decoded": S, "decoded_skip": S2}   decode-only cases
'use strict';
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('tokenizers');

const [tokDir, outDir] = process.argv.slice(2);
let seed = 0x5eed1234;
function rnd() {  // mulberry32
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const ri = (n) => Math.floor(rnd() * n);
const pick = (a) => a[ri(a.length)];
const cp = (lo, hi) => String.fromCodePoint(lo + ri(hi - lo + 1));
const rep = (n, f) => Array.from({ length: n }, f).join('');

const words = ('the of and to in is you that it he was for on are as with his they at be this have from or one had ' +
  'by word but not what all were we when your can said there use an each which she do how their if will up other ' +
  'about out many then them these so some her would make like him into time has look two more write go see number ' +
  'no way could people my than first water been call who oil its now find long down day did get come made may part ' +
  'tokenizer inference server DeepSeek model attention expert router latency throughput batch cache prefix GPU CPU ' +
  "don't I'm it's we're they've she'll you'd isn't won't can't Hello World OpenAI JSON HTTP API URL e.g. i.e. etc " +
  'naïve café résumé coöperate façade Zürich São Paulo Ångström').split(' ');
const punct = ['.', ',', '!', '?', ';', ':', '...', ' -', ' —', '"', "'", '(', ')', '[', ']', '/', '&', '%', '#', '@'];
const zh = '的一是不了人我在有他这为之大来以个中上们到说国和地也子时道出而要于就下得可你年生自会那后能对着事其里所去' +
  '行过家十用发天如然作方成者多日都三小军二无同么经法当起与好看学进种将还分此心前面又定见只主没公从知' +
  '模型推理服务器词元分析工具调用思考天气北京杭州明天怎么样请帮我查询数据结构算法测试';
const zhPunct = ['，', '。', '！', '？', '、', '“', '”', '：', '；', '（', '）', '《', '》', '…'];
const hira = () => cp(0x3041, 0x3096);
const kata = () => cp(0x30a1, 0x30fa);
const jaWords = ['私', 'は', '日本語', 'を', '勉強', 'しています', 'トークナイザー', 'テスト', 'です', '東京', 'コンピューター',
  'ありがとう', 'ございます', '今日', 'の', '天気', 'が', 'いい', 'ラーメン', '食べたい', 'ｶﾀｶﾅ', 'ー', '〜', '「', '」', '。', '、'];
const emoji = ['😀', '😂', '🥲', '👍', '👍🏽', '❤️', '🔥', '🚀', '🇨🇳', '🇯🇵', '🇺🇸', '👨‍👩‍👧‍👦', '🧑🏿‍💻', '✅', '⚠️', '☕', '🎉', '🤖',
  '1️⃣', '#️⃣', '🏳️‍🌈', '🐍', '🦀', '™', '©', '♥', '★', '☂', '🫠', '🪐'];
const spaces = [' ', '  ', '\t', '\n', '\r\n', '\n\n', '   ', '\u00a0', '\u3000', '\u2003', '\u180e', '\u2028',
  '\u200b', '\u0085', '\u000b', '\u000c', ' \n', '\t\t', '        '];
const scripts = [[0x41, 0x5a], [0x61, 0x7a], [0xc0, 0x24f], [0x370, 0x3ff], [0x400, 0x4ff], [0x5d0, 0x5ea],
  [0x620, 0x64a], [0x900, 0x97f], [0xe01, 0xe3a], [0xac00, 0xd7a3], [0x1100, 0x11ff], [0x10a0, 0x10ff],
  [0x300, 0x36f], [0x2000, 0x206f], [0x2190, 0x22ff], [0x2460, 0x24ff], [0x2500, 0x257f], [0xff01, 0xff5e],
  [0x3400, 0x4dbf], [0x9fa0, 0x9fff], [0x4e00, 0x9fa5], [0x3040, 0x30ff], [0x1f300, 0x1f64f], [0x660, 0x669],
  [0xff10, 0xff19], [0x2160, 0x2188], [0xb2, 0xbe], [0x20a0, 0x20bf], [0x1d400, 0x1d4ff], [0xfe00, 0xfe0f]];
const specials = ['<｜begin▁of▁sentence｜>', '<｜end▁of▁sentence｜>', '<｜User｜>', '<｜Assistant｜>', '<｜tool▁calls▁begin｜>',
  '<｜tool▁call▁begin｜>', '<｜tool▁sep｜>', '<｜tool▁call▁end｜>', '<｜tool▁calls▁end｜>', '<｜tool▁outputs▁begin｜>',
  '<｜tool▁output▁begin｜>', '<｜tool▁output▁end｜>', '<｜tool▁outputs▁end｜>', '<|EOT|>', '<｜fim▁hole｜>',
  '<｜fim▁begin｜>', '<｜fim▁end｜>', '<｜▁pad▁｜>', '<｜place▁holder▁no▁7｜>', '<｜place▁holder▁no▁799｜>'];
const lookalikes = ['<|User|>', '<|Assistant|>', '<｜User|>', '<|end_of_sentence|>', '<｜end_of_sentence｜>',
  '<｜User｜', '｜User｜>', '<｜user｜>', '<｜tool▁sep', '<<｜User｜>>', '<｜｜>', '<think>', '</think>', '<｜DSML｜invoke',
  '<|eot|>', '<｜place▁holder▁no▁999｜>', '<EOT>', '<|EOT|', '｜DSML｜'];

function english() {
  let s = rep(1 + ri(25), () => pick(words) + (rnd() < 0.15 ? pick(punct) : '') + ' ');
  if (rnd() < 0.5) s = s[0].toUpperCase() + s.slice(1);
  return rnd() < 0.5 ? s.trimEnd() + '.' : s;
}
function chinese() { return rep(1 + ri(40), () => (rnd() < 0.12 ? pick(zhPunct) : zh[ri(zh.length)])); }
function japanese() {
  return rep(1 + ri(20), () => { const r = rnd(); return r < 0.5 ? pick(jaWords) : r < 0.75 ? hira() : r < 0.9 ? kata() : zh[ri(zh.length)]; });
}
const ident = () => pick(['x', 'i', 'n_tokens', 'foo', 'Bar', 'kMax', 'self', 'data_', 'camelCase', 'snake_case_name', '_priv', '__init__']);
function code() {
  const lines = [
    () => `int ${ident()} = ${ri(1000)};`, () => `for (int i = 0; i < ${ident()}.size(); ++i) {`,
    () => `    return ${ident()}->${ident()}(${ri(9)}, "${pick(words)}");`, () => `def ${ident()}(${ident()}, *args, **kwargs):`,
    () => `        if ${ident()} is None: raise ValueError(f"bad {${ident()}!r}")`, () => `const ${ident()} = async () => await fetch('/v1/chat');`,
    () => `{"name": "${pick(words)}", "arguments": {"city": "${pick(words)}", "n": ${ri(100)}}}`, () => `#include <vector>`,
    () => `\t${ident()} += 0x${ri(65535).toString(16)}; // ${pick(words)}`, () => `}`, () => `SELECT * FROM t WHERE id=${ri(99)};`,
    () => `$ ls -la | grep -E '^d' && echo "ok" >> /tmp/log.txt`, () => `x = [${ri(9)}, ${ri(99)}, ${ri(999)}]  # comment`,
    () => `template <typename T> T* ${ident()}(std::span<const T> xs) noexcept;`, () => `    ${ident()}: ${pick(['i32', 'u8', 'String'])},`,
    () => `<div class="${ident()}">&nbsp;</div>`, () => `\\begin{equation} x^2 + y_1 = \\alpha \\end{equation}`, () => '```python',
  ];
  return rep(1 + ri(8), () => pick(lines)() + pick(['\n', '\n', '\r\n', '\n\n', '\n    ', '\n\t']));
}
function numbers() {
  const f = [() => String(ri(10 ** (1 + ri(9)))), () => rep(1 + ri(30), () => String(ri(10))), () => `${ri(1000)}.${ri(10000)}`,
    () => `${ri(999)},${String(ri(1000)).padStart(3, '0')},${String(ri(1000)).padStart(3, '0')}`, () => `+1 (${ri(999)}) 555-${ri(9999)}`,
    () => `2024-${ri(12) + 1}-${ri(28) + 1}T${ri(24)}:${ri(60)}:00Z`, () => `abc${ri(100000)}def`, () => `${ri(100)}%`, () => `-${ri(1e6)}e-${ri(30)}`,
    () => rep(1 + ri(8), () => String.fromCodePoint(pick([0x660, 0xff10, 0x966, 0xe50])+ri(10))), () => pick(['²', '³', '½', 'Ⅻ', '①', '⁵', '₃', '〇']) + ri(99),
    () => `v${ri(9)}.${ri(20)}.${ri(100)}`, () => `0x${ri(2 ** 31).toString(16).toUpperCase()}`, () => `${ri(9)} ${ri(99)}  ${ri(999)}   ${ri(9999)}`];
  return rep(1 + ri(4), () => pick(f)() + pick([' ', '', ', ', '\n', '元', '個']));
}
function emojis() { return rep(1 + ri(10), () => (rnd() < 0.6 ? pick(emoji) : pick(words) + ' ')); }
function whitespace() {
  return rep(1 + ri(12), () => { const r = rnd(); return r < 0.5 ? pick(spaces).repeat(1 + ri(6)) : r < 0.8 ? pick(words) : pick(punct); });
}
function mixed() {
  return rep(1 + ri(16), () => { const [lo, hi] = pick(scripts); return rep(1 + ri(6), () => cp(lo, hi)) + (rnd() < 0.3 ? pick(spaces) : ''); });
}
function specialText() {
  return rep(1 + ri(8), () => { const r = rnd(); return r < 0.35 ? pick(specials) : r < 0.6 ? pick(lookalikes) : r < 0.85 ? english() : chinese(); });
}
function soup() {
  return rep(1 + ri(30), () => { const r = rnd(); if (r < 0.7) { const [lo, hi] = pick(scripts); return cp(lo, hi); } return r < 0.85 ? pick(spaces) : pick(punct); });
}
function invalidBytes() {
  const parts = [];
  const n = 1 + ri(10);
  for (let i = 0; i < n; i++) {
    const r = rnd();
    if (r < 0.3) parts.push(Buffer.from(english().slice(0, 20)));
    else if (r < 0.45) parts.push(Buffer.from(chinese().slice(0, 5)).subarray(0, 1 + ri(5)));  // truncated CJK
    else if (r < 0.55) parts.push(Buffer.from(pick([[0xc0, 0xaf], [0xe0, 0x80, 0xaf], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80]])));
    else if (r < 0.7) parts.push(Buffer.from([0x80 + ri(64)]));
    else if (r < 0.8) parts.push(Buffer.from([0xfe + ri(2)]));
    else parts.push(Buffer.from(rep(1 + ri(6), () => '').length ? [] : Array.from({ length: 1 + ri(6) }, () => ri(256))));
  }
  return Buffer.concat(parts);
}
function longString() {
  const r = rnd();
  const n = 2000 + ri(8000);
  if (r < 0.25) return ' '.repeat(n);
  if (r < 0.5) return rep(n, () => pick('abcdefghijklmnopqrstuvwxyz'));
  if (r < 0.75) return rep(n / 4, () => pick(['\n', ' ', '\t', '  ', '\r\n']));
  return rep(n / 50, english);
}

const plan = [['english', 800, english], ['chinese', 600, chinese], ['japanese', 600, japanese], ['code', 800, code],
  ['numbers', 600, numbers], ['emoji', 400, emojis], ['whitespace', 500, whitespace], ['mixed', 600, mixed],
  ['special', 500, specialText], ['soup', 400, soup], ['invalid_utf8', 400, invalidBytes], ['long', 24, longString]];

(async () => {
  const tok = Tokenizer.fromFile(path.join(tokDir, 'tokenizer.json'));
  const lines = [];
  const enc = async (s) => (await tok.encode(s, null, { addSpecialTokens: false })).getIds();
  for (const [cat, n, gen] of plan) {
    for (let i = 0; i < n; i++) {
      const v = gen();
      const text = Buffer.isBuffer(v) ? v.toString('utf8') : v;  // WHATWG decode = U+FFFD repair
      const ids = await enc(text);
      const rec = Buffer.isBuffer(v) ? { cat, hex: v.toString('hex') } : { cat, text };
      rec.ids = ids;
      rec.decoded = await tok.decode(ids, false);
      lines.push(JSON.stringify(rec));
    }
  }
  // Decode-only: random ids (incl. lone UTF-8 continuation-byte tokens and special tokens).
  for (let i = 0; i < 300; i++) {
    const ids = Array.from({ length: 1 + ri(20) }, () => (rnd() < 0.15 ? 128000 + ri(815) : rnd() < 0.2 ? ri(300) : ri(128000)));
    lines.push(JSON.stringify({ cat: 'decode', ids, decoded: await tok.decode(ids, false), decoded_skip: await tok.decode(ids, true) }));
  }
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(path.join(outDir, 'tokenizer_cases.jsonl'), lines.join('\n') + '\n');
  console.log(`wrote ${lines.length} cases to ${path.join(outDir, 'tokenizer_cases.jsonl')}`);

  // Benchmark corpus: every valid-UTF-8 "text" of the cases, joined by "\n" (bench/text/
  // tokenizer_bench.cc builds the same bytes from the same file).
  const corpus = lines.map((l) => JSON.parse(l)).filter((r) => r.text !== undefined).map((r) => r.text).join('\n');
  if (process.env.DSS_BENCH === '1') {
    // Same corpora as bench/text/tokenizer_bench.cc. Wall-clock and this process's CPU time.
    const recs = lines.map((l) => JSON.parse(l)).filter((r) => r.text !== undefined);
    const noLong = recs.filter((r) => r.cat !== 'long').map((r) => r.text).join('\n');
    for (const [name, text] of [['corpus', corpus], ['corpus without long', noLong]]) {
      const bytes = Buffer.byteLength(text);
      await enc(text);
      const reps = 5;
      const t0 = process.hrtime.bigint();
      const c0 = process.cpuUsage();
      for (let r = 0; r < reps; r++) await enc(text);
      const wall = Number(process.hrtime.bigint() - t0) / 1e9;
      const cu = process.cpuUsage(c0);
      const cpu = (cu.user + cu.system) / 1e6;
      console.log(`HF tokenizers encode, ${name} (${bytes} bytes, one string): ` +
        `${(bytes * reps / wall / 1e6).toFixed(2)} MB/s wall, ${(bytes * reps / cpu / 1e6).toFixed(2)} MB/s per CPU second`);
    }
  }
})();
