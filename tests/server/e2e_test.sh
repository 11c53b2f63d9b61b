#!/usr/bin/env bash
# End-to-end test of `dsserve serve`: the real binary on 127.0.0.1 with the tiny random model,
# driven by the official OpenAI Node SDK (e2e_sdk.mjs) and by curl for raw SSE framing, every
# error status, slow-client timeouts, the queue limit (429) and graceful shutdown (exit 0).
# Usage: e2e_test.sh DSSERVE REPO_ROOT
set -euo pipefail
DSSERVE=$1
ROOT=$2
# shellcheck source=server_lib.sh
source "$ROOT/tests/server/server_lib.sh"
scratch_dir e2e
[ -d "$ROOT/node_modules/openai" ] || fail "npm package openai missing: run 'npm ci' in $ROOT"

"$DSSERVE" init-model --preset tiny --out "$WORK/tiny" >/dev/null 2>&1
start_server A --model "$WORK/tiny" --api-key test-key --max-request-bytes 65536 \
  --served-model-name tiny --header-timeout 2 --body-timeout 2 --shutdown-timeout 20
PIDS+=("$A_PID")
BASE="http://127.0.0.1:$A_PORT"
AUTH=(-H "Authorization: Bearer test-key")

echo "== OpenAI SDK"
node "$ROOT/tests/server/e2e_sdk.mjs" "$BASE/v1" test-key tiny

echo "== keep-alive idle limit announced (Keep-Alive: timeout = --header-timeout)"
curl -si "${AUTH[@]}" "$BASE/v1/models" | tr -d '\r' | grep -qix 'keep-alive: timeout=2' \
  || fail "no Keep-Alive: timeout=2 header"
echo "ok   Keep-Alive: timeout=2"

echo "== raw SSE framing (curl)"
curl -sN -D "$WORK/sse_head" "${AUTH[@]}" "$BASE/v1/chat/completions" \
  -d '{"messages":[{"role":"user","content":"frame me"}],"max_tokens":6,"stream":true,"n":2,"stream_options":{"include_usage":true}}' \
  >"$WORK/sse_body"
grep -qi '^content-type: text/event-stream' "$WORK/sse_head" || fail "SSE content type"
grep -qi '^transfer-encoding: chunked' "$WORK/sse_head" || fail "SSE chunked"
node - "$WORK/sse_body" <<'JS'
const fs = require('fs');
const raw = fs.readFileSync(process.argv[2], 'utf8');
if (!raw.endsWith('data: [DONE]\n\n')) throw new Error('stream must end with data: [DONE] and a blank line');
const events = raw.slice(0, -2).split('\n\n');
const finished = new Set();
let usage = null;
for (const [i, ev] of events.entries()) {
  if (!ev.startsWith('data: ') || ev.includes('\n')) throw new Error(`event ${i} is not one data line: ${JSON.stringify(ev)}`);
  const payload = ev.slice(6);
  if (payload === '[DONE]') { if (i !== events.length - 1) throw new Error('[DONE] not last'); continue; }
  const j = JSON.parse(payload);
  if (usage) throw new Error('chunk after the usage chunk');
  if (j.usage) { usage = j.usage; if (j.choices.length !== 0) throw new Error('usage chunk has choices'); continue; }
  if (!('usage' in j) || j.usage !== null) throw new Error('include_usage: chunks carry usage: null');
  for (const c of j.choices) {
    if (finished.has(c.index)) throw new Error(`choice ${c.index} has a chunk after its finish_reason`);
    if (c.finish_reason) finished.add(c.index);
  }
}
if (finished.size !== 2) throw new Error('both choices must finish');
if (!usage || usage.completion_tokens < 2) throw new Error('usage chunk missing');
console.log(`ok   ${events.length} SSE events well framed`);
JS

echo "== error statuses (curl)"
expect_status() {  # expect_status CODE [PARAM] -- curl args...
  local want=$1 param=$2; shift 3
  local got
  got=$(curl -s -o "$WORK/err_body" -w '%{http_code}' "$@" || true)
  [ "$got" = "$want" ] || { cat "$WORK/err_body" >&2; fail "expected $want, got $got for: $*"; }
  if [ "$want" != 200 ]; then
    node -e "const j=JSON.parse(require('fs').readFileSync('$WORK/err_body','utf8'));
      if(!j.error||!j.error.message||j.error.code!==$want) throw new Error('not OpenAI error JSON');
      if('$param' && j.error.param!=='$param') throw new Error('param: '+j.error.param);" ||
      { cat "$WORK/err_body" >&2; fail "error body for $want"; }
  fi
  echo "ok   $want $param"
}
CHAT="$BASE/v1/chat/completions"
expect_status 400 body -- "${AUTH[@]}" "$CHAT" -d '{not json'
expect_status 400 messages -- "${AUTH[@]}" "$CHAT" -d '{"max_tokens":3}'
expect_status 400 top_p -- "${AUTH[@]}" "$CHAT" -d '{"messages":[{"role":"user","content":"x"}],"top_p":1.5}'
expect_status 400 n -- "${AUTH[@]}" "$CHAT" -d '{"messages":[{"role":"user","content":"x"}],"n":0}'
expect_status 400 max_tokens -- "${AUTH[@]}" "$CHAT" -d '{"messages":[{"role":"user","content":"x"}],"max_tokens":"many"}'
expect_status 400 prompt -- "${AUTH[@]}" "$BASE/v1/completions" -d '{"prompt":[1,"a"]}'
expect_status 400 "" -- "${AUTH[@]}" "$BASE/v1/completions" -d '{"prompt":[1,2,3],"max_tokens":100000}'
expect_status 401 "" -- "$CHAT" -d '{"messages":[{"role":"user","content":"x"}]}'
expect_status 401 "" -- -H "Authorization: Bearer nope" "$BASE/v1/models"
expect_status 404 "" -- "${AUTH[@]}" "$BASE/v1/nothing"
expect_status 404 model -- "${AUTH[@]}" "$CHAT" -d '{"model":"gpt-4","messages":[{"role":"user","content":"x"}]}'
expect_status 405 "" -- "${AUTH[@]}" "$CHAT"
head -c 100000 /dev/zero | tr '\0' 'a' >"$WORK/big"
expect_status 413 "" -- "${AUTH[@]}" "$CHAT" --data-binary "@$WORK/big"
expect_status 413 "" -- "${AUTH[@]}" -H 'Transfer-Encoding: chunked' "$CHAT" --data-binary "@$WORK/big"
expect_status 200 "" -- "$BASE/health"
expect_status 200 "" -- "$BASE/version"
expect_status 200 "" -- "$BASE/metrics"

echo "== slow clients are cut off (--header-timeout 2, --body-timeout 2)"
slow_client() {  # slow_client TEXT: send TEXT, then nothing; the server must close within 4 s
  local t0=$SECONDS
  exec 3<>"/dev/tcp/127.0.0.1/$A_PORT"
  printf '%b' "$1" >&3
  timeout 6 cat <&3 >/dev/null || fail "connection still open after 6 s"
  exec 3<&-
  [ $((SECONDS - t0)) -le 5 ] || fail "slow client held the connection $((SECONDS - t0)) s"
}
slow_client 'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n'
slow_client 'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"mess'
echo "ok   slow header and slow body"

echo "== graceful shutdown: SIGTERM lets the open stream finish, exit 0"
curl -sN "${AUTH[@]}" "$CHAT" -d '{"messages":[{"role":"user","content":"last"}],"max_tokens":64,"ignore_eos":true,"stream":true}' \
  >"$WORK/last_stream" &
CURL_PID=$!
for _ in $(seq 1 100); do [ -s "$WORK/last_stream" ] && break; sleep 0.05; done
stop_server A
wait "$CURL_PID" || true
tail -c 14 "$WORK/last_stream" | grep -q '^data: \[DONE\]' || fail "in-flight stream cut at shutdown"
grep -q '"finish_reason":"length"' "$WORK/last_stream" || fail "in-flight stream did not finish"
echo "ok   stream completed during shutdown, exit 0"

echo "== 429 over --max-queued-requests, shutdown timeout cancels"
start_server B --model "$WORK/tiny" --max-running-requests 1 --max-queued-requests 1 --shutdown-timeout 1
PIDS+=("$B_PID")
for i in 1 2 3 4 5 6; do
  curl -s -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$B_PORT/v1/completions" \
    -d '{"prompt":[1,2,3],"max_tokens":200,"ignore_eos":true}' >"$WORK/q$i" &
done
sleep 1
stop_server B  # 200-token requests cannot finish within 1 s: they are cancelled, exit 0
wait
codes=$(cat "$WORK"/q* | sort | tr '\n' ' ')
echo "statuses: $codes"
case "$codes" in *429*) ;; *) fail "no 429 among $codes";; esac
case "$codes" in *200*) ;; *) fail "no 200 among $codes";; esac
echo "== no --model: the default demo model is a random-weight DeepSeek-V3.2 with V3.2's chat format"
DSSERVE=$(realpath "$DSSERVE")
pushd "$WORK" >/dev/null  # the default model is created under the current directory
start_server D --max-running-requests 2
popd >/dev/null
PIDS+=("$D_PID")
grep -q 'serving demo-tiny-v32 (v32 format, tool parser v32)' "$WORK/D.log" ||
  { cat "$WORK/D.log" >&2; fail "default model start-up line"; }
DEMO="$WORK/models/demo-tiny-v32"
grep -q '"model_type": *"deepseek_v32"' "$DEMO/config.json" || fail "demo model is not deepseek_v32"
node -e 'const c = require(process.argv[1]);
  if ("chat_template" in c || c.add_bos_token !== false) process.exit(1);' \
  "$DEMO/tokenizer_config.json" || fail "demo tokenizer_config.json is not V3.2's"
# The chat prompt is exactly the V3.2 encoder's chat-mode text (one BOS, `</think>` after the
# Assistant tag), one token longer than the V3 template's; and V3.2's tokenizer encodes the V3.2
# README's example (`</think>` = 128799, `<think>` = 128798) in its 21 tokens, with no added BOS.
usage_prompt() {
  curl -s "http://127.0.0.1:$D_PORT/v1/$1" -d "$2" |
    node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).usage.prompt_tokens))'
}
chat_n=$(usage_prompt chat/completions '{"messages":[{"role":"user","content":"hi"}],"max_tokens":1}')
v32_n=$(usage_prompt completions '{"prompt":"<｜begin▁of▁sentence｜><｜User｜>hi<｜Assistant｜></think>","max_tokens":1}')
v3_n=$(usage_prompt completions '{"prompt":"<｜begin▁of▁sentence｜><｜User｜>hi<｜Assistant｜>","max_tokens":1}')
readme_n=$(usage_prompt completions '{"prompt":"<｜begin▁of▁sentence｜><｜User｜>hello<｜Assistant｜></think>Hello! I am DeepSeek.<｜end▁of▁sentence｜><｜User｜>1+1=?<｜Assistant｜><think>","max_tokens":1}')
echo "prompt tokens: chat $chat_n, V3.2 text $v32_n, V3 text $v3_n, V3.2 README example $readme_n"
[ "$chat_n" = 5 ] && [ "$v32_n" = 5 ] && [ "$v3_n" = 4 ] || fail "chat on the demo model is not the V3.2 format"
[ "$readme_n" = 21 ] || fail "V3.2 tokenizer: README example is $readme_n tokens, not 21"
stop_server D
echo "ok   default demo model: V3.2, V3.2 tokenizer_config, V3.2 chat format"

echo "e2e_test: all passed"
