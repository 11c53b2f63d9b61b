"""Renders the chat test conversations with the official Jinja templates.

Environment as in Hugging Face transformers' apply_chat_template: ImmutableSandboxedEnvironment,
trim_blocks and lstrip_blocks on, loopcontrols extension; variables messages, tools, bos_token,
eos_token, add_generation_prompt and (V3.1) thinking.
Usage: gen_chat_data.py TOKENIZER_CONFIG V31_TEMPLATE OUT_JSONL
"""
import json
import sys

from jinja2.sandbox import ImmutableSandboxedEnvironment

BOS = "<｜begin▁of▁sentence｜>"
EOS = "<｜end▁of▁sentence｜>"

WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Get the weather of a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
SEARCH = {"type": "function", "function": {"name": "web_search", "description": "搜索网页",
          "parameters": {"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}}}}}


def call(name, args, i=0):
    return {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}


def u(c): return {"role": "user", "content": c}
def s(c): return {"role": "system", "content": c}
def a(c): return {"role": "assistant", "content": c}
def t(c, i=0): return {"role": "tool", "content": c, "tool_call_id": f"call_{i}"}
def ac(calls, content=None): return {"role": "assistant", "content": content, "tool_calls": calls}


CONVERSATIONS = [
    ("single_user", [u("Hello!")], []),
    ("system_user", [s("You are a helpful assistant."), u("What is 2+2?")], []),
    ("two_systems", [s("Be brief."), u("Hi"), s("Answer in French.")], []),
    ("empty_system", [s(""), u("Hi")], []),
    ("multi_turn", [u("Hi"), a("Hello! How can I help?"), u("Tell me a joke.")], []),
    ("multi_turn_system", [s("sys"), u("a"), a("b"), u("c"), a("d"), u("e")], []),
    ("ends_with_assistant", [u("Hi"), a("Hello!")], []),
    ("history_with_think", [u("1+1?"), a("Let me think.</think>2"), u("and 2+2?")], []),
    ("history_two_think_tags", [u("q"), a("r1</think>mid</think>answer"), u("q2")], []),
    ("chinese", [s("你是一个乐于助人的助手。"), u("明天杭州和北京的天气怎么样？")], []),
    ("emoji_newlines", [u("line1\nline2\n\n🚀 emoji 👍🏽"), a("ok\n```python\nprint(1)\n```"), u("thanks")], []),
    ("special_text_in_content", [u("What does <｜User｜> mean? and <|User|>?")], []),
    ("tool_call_single", [u("Weather in Paris?"), ac([call("get_weather", {"city": "Paris"})]),
                          t('{"temp": 21}'), a("It is 21 degrees in Paris.")], [WEATHER]),
    ("tool_call_two_calls", [u("Weather in Paris and Rome?"),
                             ac([call("get_weather", {"city": "Paris"}), call("get_weather", {"city": "Rome"}, 1)]),
                             t('{"temp": 21}'), t('{"temp": 25}', 1), a("Paris 21, Rome 25.")], [WEATHER]),
    ("tool_result_last", [u("Weather in Oslo?"), ac([call("get_weather", {"city": "Oslo"})]), t('{"temp": -3}')], [WEATHER]),
    ("tool_two_rounds", [u("Paris?"), ac([call("get_weather", {"city": "Paris"})]), t("21"), a("21."),
                         u("Rome?"), ac([call("get_weather", {"city": "Rome"})]), t("25"), a("25.")], [WEATHER]),
    ("tool_user_after_result", [u("Paris?"), ac([call("get_weather", {"city": "Paris"})]), t("21"), u("and Rome?")], [WEATHER]),
    ("tool_call_with_content", [u("Paris?"), ac([call("get_weather", {"city": "Paris"})], "Let me check."),
                                t("21"), a("21 degrees.")], [WEATHER]),
    ("tool_chinese_args", [s("你是助手"), u("搜索天气"), ac([call("web_search", {"q": "杭州 天气", "n": 3})]),
                           t("[{\"title\": \"杭州天气\"}]"), a("杭州今天晴。")], [SEARCH, WEATHER]),
    ("tool_three_calls", [u("x"), ac([call("web_search", {"q": "a"}), call("web_search", {"q": "b"}, 1),
                                      call("get_weather", {"city": "c"}, 2)]), t("A"), t("B", 1), t("C", 2)], [SEARCH, WEATHER]),
    ("tools_defined_no_call", [s("Use tools when needed."), u("Hi there")], [WEATHER]),
    ("tool_nested_args", [u("q"), ac([call("web_search", {"q": "x", "filters": {"lang": ["en", "fr"], "safe": True, "n": 1.5}})]),
                          t(""), a("done")], [SEARCH]),
    ("long_system_multi", [s("A" * 50), u("B"), a("C"), u("D"), a("E</think>F"), u("G")], []),
    ("assistant_empty", [u("Say nothing"), a(""), u("ok")], []),
    ("tool_then_multi_turn", [s("sys"), u("Paris?"), ac([call("get_weather", {"city": "Paris"})]), t("21"),
                              a("21."), u("thanks"), a("welcome"), u("bye")], [WEATHER]),
    ("whitespace_content", [u("  leading and trailing  "), a("\n\nanswer\n"), u("\t")], []),
    ("code_question", [s("You are a coding assistant."), u("Write a C++ hello world."),
                       a("```cpp\n#include <cstdio>\nint main() { std::puts(\"hi\"); }\n```"), u("Now in Rust.")], []),
    ("json_in_content", [u('{"a": 1, "b": [1,2,3]}'), a('{"ok": true}'), u("more")], []),
    ("tool_result_json_unicode", [u("w"), ac([call("get_weather", {"city": "Zürich"})]), t('{"desc": "☀️ sunny", "t": 20}'),
                                  a("Sunny ☀️")], [WEATHER]),
    ("two_tool_rounds_no_answer", [u("a"), ac([call("web_search", {"q": "1"})]), t("r1"),
                                   ac([call("web_search", {"q": "2"})]), t("r2")], [SEARCH]),
    ("japanese", [u("東京の天気は？"), a("晴れです。"), u("ありがとう")], []),
    ("system_only_then_user_twice", [s("S1"), s("S2"), s("S3"), u("U1"), u("U2")], []),
]

# Variants: (format, thinking, add_generation_prompt)
VARIANTS = [("v3", None, True), ("v3", None, False), ("v31", False, True), ("v31", True, True), ("v31", False, False)]


def main():
    cfg_path, v31_path, out_path = sys.argv[1:4]
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    templates = {"v3": env.from_string(json.load(open(cfg_path, encoding="utf-8"))["chat_template"]),
                 "v31": env.from_string(open(v31_path, encoding="utf-8").read())}
    lines = []
    for name, messages, tools in CONVERSATIONS:
        for fmt, thinking, gen in VARIANTS:
            kw = dict(messages=messages, tools=tools or None, bos_token=BOS, eos_token=EOS, add_generation_prompt=gen)
            request = {"messages": messages, "add_generation_prompt": gen}
            if tools:
                request["tools"] = tools
            if thinking is not None:
                kw["thinking"] = thinking
                request["thinking"] = thinking
            prompt = templates[fmt].render(**kw)
            lines.append(json.dumps({"name": name, "format": fmt, "request": request, "prompt": prompt}, ensure_ascii=False))
    # V3.1 prefix completion (assistant "prefix": true) with thinking on and off.
    for thinking in (False, True):
        messages = [u("Write a poem"), {"role": "assistant", "content": "Roses", "prefix": True}]
        prompt = templates["v31"].render(messages=messages, bos_token=BOS, eos_token=EOS, add_generation_prompt=False,
                                         thinking=thinking)
        lines.append(json.dumps({"name": "prefix", "format": "v31", "request": {
            "messages": messages, "add_generation_prompt": False, "thinking": thinking}, "prompt": prompt}, ensure_ascii=False))
    with open(out_path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {len(lines)} renders of {len(CONVERSATIONS)} conversations to {out_path}")


if __name__ == "__main__":
    main()
