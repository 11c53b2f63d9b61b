#!/usr/bin/env python3
"""Independent judge of strings generated under regex / GBNF constraints (regex_gbnf_test.cc).

Usage: check_strings.py CASES.json, CASES = [{"kind", "pattern", "strings": [...]}] where kind is
  regex:  re.fullmatch(pattern, s, re.ASCII)
  json:   json.loads(s)
  arith:  ast.parse(s, mode="eval") with only numbers, + - * / and unary minus
  choice: s is one of json.loads(pattern)
Prints each failure and a summary; exit status 1 on any failure.
"""
import ast
import json
import re
import sys


def arith_ok(s):
    try:
        tree = ast.parse(s, mode="eval")
    except SyntaxError:
        return False
    allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Add, ast.Sub, ast.Mult,
               ast.Div, ast.USub)
    return all(isinstance(n, allowed) for n in ast.walk(tree))


def main():
    cases = json.load(open(sys.argv[1], encoding="utf-8"))
    total = bad = 0
    for c in cases:
        for s in c["strings"]:
            total += 1
            kind, pat = c["kind"], c["pattern"]
            if kind == "regex":
                ok = re.fullmatch(pat, s, re.ASCII) is not None
            elif kind == "json":
                try:
                    json.loads(s)
                    ok = True
                except ValueError:
                    ok = False
            elif kind == "arith":
                ok = arith_ok(s)
            else:
                ok = s in json.loads(pat)
            if not ok:
                bad += 1
                print(f"{kind} {pat!r}: rejected {s!r}")
    print(f"check_strings: {total - bad}/{total} accepted")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
