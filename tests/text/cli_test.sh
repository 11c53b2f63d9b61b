#!/usr/bin/env bash
# End-to-end checks of `dsserve tokenize` and `dsserve render-chat` through the real binary.
# Usage: cli_test.sh DSSERVE TOKENIZER_DIR DATA_DIR   (run by ctest as text_cli)
set -uo pipefail
TMPDIR_T="$(mktemp -d)"
trap 'rm -rf "$TMPDIR_T"' EXIT
bin="$1" tok="$2" data="$3"
fails=0
check() {  # check NAME EXPECTED ACTUAL
  if [ "$2" != "$3" ]; then
    echo "FAIL $1: expected [$2] got [$3]"
    fails=$((fails + 1))
  else
    echo "ok   $1"
  fi
}
py=/usr/bin/python3

# tokenize: the first 50 cases of the HF corpus, one JSON string per line (--jsonl).
head -n 50 "$data/tokenizer_cases.jsonl" | grep '"text"' |
  $py -c 'import sys,json; [print(json.dumps(json.loads(l)["text"])) for l in sys.stdin]' >"$TMPDIR_T/in.jsonl"
head -n 50 "$data/tokenizer_cases.jsonl" | grep '"text"' |
  $py -c 'import sys,json; [print(json.dumps(json.loads(l)["ids"], separators=(",", ":"))) for l in sys.stdin]' >"$TMPDIR_T/want.jsonl"
"$bin" tokenize --tokenizer "$tok" --jsonl <"$TMPDIR_T/in.jsonl" >"$TMPDIR_T/got.jsonl"
check "tokenize --jsonl vs HF ids" "$(md5sum <"$TMPDIR_T/want.jsonl")" "$(md5sum <"$TMPDIR_T/got.jsonl")"
check "tokenize stdin" "[19923,223,3427,7351,251,225]" "$(printf 'Hello 世界 🚀' | "$bin" tokenize --tokenizer "$tok")"
check "tokenize --add-bos" "[0,19923]" "$(printf 'Hello' | "$bin" tokenize --tokenizer "$tok" --add-bos)"
check "tokenize --decode" "Hello 世界 🚀" "$(echo '[19923,223,3427,7351,251,225]' | "$bin" tokenize --tokenizer "$tok" --decode)"
check "tokenize --decode --jsonl" '"<｜end▁of▁sentence｜>"' "$(echo '[1]' | "$bin" tokenize --tokenizer "$tok" --decode --jsonl)"
# --decode input errors name the line and the value, exit 2 (129280 is one past the vocabulary;
# 2^32 would wrap to 0 in an int32).
for bad in '[1, 129280]|stdin: 129280 is not a token id of this tokenizer' \
           '[4294967296]|stdin: 4294967296 is not a token id of this tokenizer' \
           '[-1]|stdin: -1 is not a token id of this tokenizer' \
           '{"a": 1}|stdin: expected a JSON list of token ids'; do
  in="${bad%%|*}" want="dsserve tokenize: ${bad#*|}"
  got="$(echo "$in" | "$bin" tokenize --tokenizer "$tok" --decode 2>&1 >/dev/null)"; rc=$?
  check "tokenize --decode $in" "$want rc=2" "$got rc=$rc"
done
check "tokenize --decode --jsonl line number" "dsserve tokenize: stdin line 2: 1.5 is not a token id of this tokenizer" \
  "$(printf '[1]\n[1.5]\n' | "$bin" tokenize --tokenizer "$tok" --decode --jsonl 2>&1 >/dev/null)"

# render-chat: a few official-template renders (format given and detected).
$py - "$data/chat_cases.jsonl" "$TMPDIR_T" <<'PY'
import json, sys
cases = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
picked = [c for c in cases if c["name"] in ("tool_call_two_calls", "history_with_think")]
for i, c in enumerate(picked):
    open(f"{sys.argv[2]}/req{i}.json", "w", encoding="utf-8").write(json.dumps(c["request"], ensure_ascii=False))
    open(f"{sys.argv[2]}/want{i}.txt", "w", encoding="utf-8").write(c["prompt"])
    open(f"{sys.argv[2]}/fmt{i}.txt", "w").write(c["format"])
PY
for f in "$TMPDIR_T"/req*.json; do
  i="${f##*/req}"; i="${i%.json}"
  fmt="$(cat "$TMPDIR_T/fmt$i.txt")"
  "$bin" render-chat --tokenizer "$tok" --format "$fmt" --no-tool-prompt <"$f" >"$TMPDIR_T/got$i.txt"
  check "render-chat case $i ($fmt)" "$(md5sum <"$TMPDIR_T/want$i.txt")" "$(md5sum <"$TMPDIR_T/got$i.txt")"
done
check "render-chat detects v3" "<｜begin▁of▁sentence｜><｜User｜>hi<｜Assistant｜>" \
  "$(echo '{"messages":[{"role":"user","content":"hi"}]}' | "$bin" render-chat --tokenizer "$tok")"
check "render-chat --ids (one BOS)" "[0,128803,6366,128804]" \
  "$(echo '{"messages":[{"role":"user","content":"hi"}]}' | "$bin" render-chat --tokenizer "$tok" --ids)"

# Bad input: exit status 2 and a message, never a crash.
for args in "tokenize --decode" "tokenize --jsonl" "render-chat" "render-chat --format v9"; do
  # shellcheck disable=SC2086
  echo 'not json' | "$bin" $args --tokenizer "$tok" >/dev/null 2>"$TMPDIR_T/err"
  rc=$?
  check "exit 2: $args" "2" "$rc"
  [ -s "$TMPDIR_T/err" ] || { echo "FAIL no message for: $args"; fails=$((fails + 1)); }
done
echo '[-1]' | "$bin" tokenize --tokenizer "$tok" --decode >/dev/null 2>&1
check "exit 2: unknown id" "2" "$?"
"$bin" tokenize --tokenizer /nonexistent </dev/null >/dev/null 2>&1
check "exit 2: missing tokenizer" "2" "$?"

[ "$fails" = 0 ] && echo "all CLI checks passed" && exit 0
exit 1
