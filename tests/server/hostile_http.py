#!/usr/bin/env python3
"""Hostile and old HTTP clients against a running `dsserve serve` (driven by hostile_http_test.sh).

Usage: hostile_http.py CHECK PORT [ARGS...]; each check prints `ok   ...` or `FAIL: ...` lines
and exits 1 if any part failed. Python 3 standard library only.

  fdlimit PORT PID LOG  200 idle connections against a server with 128 descriptors: /health
                        answers 200 within 1 s every 0.5 s for 5 s, the server uses < 1 s of CPU
                        meanwhile and its log stays under 1 MB
  disconnect PORT       6 non-stream completions (max_tokens 2000) whose clients close at once:
                        the engine is idle again within 3 s, far short of 12,000 tokens;
                        pipelined requests on one connection are all answered
  malformed PORT        syntactically broken requests get `HTTP/1.1 400` + JSON error + close
  http10 PORT           HTTP/1.0 requests get HTTP/1.0 answers: Content-Length, no chunking;
                        a stream is raw SSE bytes ended by closing the connection
"""
import json
import os
import re
import socket
import sys
import time
import urllib.request

FAILED = []


def fail(msg):
    FAILED.append(msg)
    print(f"FAIL: {msg}", flush=True)


def ok(msg):
    print(f"ok   {msg}", flush=True)


def exchange(port, raw, timeout=10.0):
    """Sends raw bytes, reads until the server closes (or timeout). Returns (bytes, closed)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(raw)
    data, closed = b"", False
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            s.settimeout(max(0.01, deadline - time.monotonic()))
            chunk = s.recv(65536)
            if not chunk:
                closed = True
                break
            data += chunk
    except socket.timeout:
        pass
    except ConnectionResetError:
        closed = True
    finally:
        s.close()
    return data, closed


def split_response(data):
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return lines[0], headers, body


def http_get(port, path, timeout):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
        return r.status, r.read()


def metrics(port):
    _, text = http_get(port, "/metrics", 5)
    out = {"finished": 0.0}  # request_success_total summed over its finished_reason labels
    for line in text.decode().splitlines():
        if not line or line.startswith("#"):
            continue
        name, value = line.rsplit(" ", 1)
        out[name] = float(value)
        if name.startswith("dsserve:request_success_total{"):
            out["finished"] += float(value)
    return out


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def check_fdlimit(port, pid, log):
    idle = []
    for _ in range(200):
        idle.append(socket.create_connection(("127.0.0.1", port), timeout=5))
    time.sleep(0.2)
    cpu0, t0 = cpu_seconds(pid), time.monotonic()
    answered, slow = 0, []
    while time.monotonic() - t0 < 5.0:
        t = time.monotonic()
        try:
            status, _ = http_get(port, "/health", 1.0)
            if status == 200:
                answered += 1
            else:
                slow.append(f"status {status}")
        except Exception as e:  # timeout, reset, refused
            slow.append(f"{type(e).__name__}: {e}")
        time.sleep(max(0.0, 0.5 - (time.monotonic() - t)))
    cpu = cpu_seconds(pid) - cpu0
    wall = time.monotonic() - t0
    log_bytes = os.path.getsize(log)
    for s in idle:
        s.close()
    if slow:
        fail(f"fd limit: /health failed {len(slow)} of {len(slow) + answered} times "
             f"within 1 s (first: {slow[0]})")
    else:
        ok(f"fd limit: /health answered 200 {answered} times in {wall:.1f} s under 200 idle "
           "connections")
    if cpu >= 1.0:
        fail(f"fd limit: server used {cpu:.2f} s CPU in {wall:.1f} s (accept busy loop?)")
    else:
        ok(f"fd limit: server CPU {cpu:.2f} s in {wall:.1f} s")
    if log_bytes >= 1 << 20:
        fail(f"fd limit: server log grew to {log_bytes} bytes")
    else:
        ok(f"fd limit: server log {log_bytes} bytes")


def check_disconnect(port):
    n, max_tokens = 6, 2000
    m0 = metrics(port)
    body = json.dumps({"prompt": "hello", "max_tokens": max_tokens, "ignore_eos": True}).encode()
    req = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(req)
        s.close()
    t0 = time.monotonic()
    idle_at = None
    while time.monotonic() - t0 < 3.0:
        m = metrics(port)
        busy = m["dsserve:num_requests_running"] + m["dsserve:num_requests_waiting"]
        if busy == 0 and m["finished"] - m0["finished"] >= n:
            idle_at = time.monotonic() - t0
            break
        time.sleep(0.05)
    time.sleep(0.3)  # let the last aborted events land in the counters
    m3 = metrics(port)  # the state ~3 s after the clients left (or once idle)
    held = m3["dsserve:kv_cache_pages_used"] - m3["dsserve:kv_cache_pages_cached"]
    held0 = m0["dsserve:kv_cache_pages_used"] - m0["dsserve:kv_cache_pages_cached"]
    if idle_at is None:
        fail(f"disconnect: engine still busy 3 s after {n} clients left "
             f"(running {m3['dsserve:num_requests_running']:.0f}, "
             f"waiting {m3['dsserve:num_requests_waiting']:.0f})")
    else:
        ok(f"disconnect: engine idle {idle_at:.2f} s after {n} clients left")
    if held != held0:
        fail(f"disconnect: {held:.0f} KV pages held by requests (idle: {held0:.0f})")
    else:
        ok(f"disconnect: KV pages held by requests back to {held0:.0f}")
    # Tokens are counted when a request finishes: if they still run, wait (up to 10 s more).
    m = m3
    while idle_at is None and time.monotonic() - t0 < 13.0:
        m = metrics(port)
        if m["dsserve:num_requests_running"] + m["dsserve:num_requests_waiting"] == 0:
            time.sleep(0.3)
            m = metrics(port)
            break
        time.sleep(0.2)
    gen = m["dsserve:generation_tokens_total"] - m0["dsserve:generation_tokens_total"]
    running = m["dsserve:num_requests_running"] + m["dsserve:num_requests_waiting"]
    if running > 0 or gen >= n * max_tokens / 4:
        fail(f"disconnect: {gen:.0f} tokens generated for {n} abandoned requests "
             f"(of {n * max_tokens} asked)" +
             (f", {running:.0f} still running after {time.monotonic() - t0:.0f} s"
              if running else ""))
    else:
        ok(f"disconnect: {gen:.0f} tokens generated of {n * max_tokens} asked")

def read_response(sock, buf):
    """Reads one Content-Length response from sock; returns (status line, body, rest of buf)."""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed before a response header")
        buf += chunk
    status, headers, rest = split_response(buf)
    want = int(headers.get("content-length", "0"))
    while len(rest) < want:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed inside a response body")
        rest += chunk
    return status, rest[:want], rest[want:]


def check_pipelined(port):
    """The disconnect watch never consumes a pipelined request: two completions sent in one
    write, a third request while they run, on one keep-alive connection, get three answers."""
    body = json.dumps({"prompt": "hello", "max_tokens": 40, "ignore_eos": True}).encode()
    req = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    problems, buf = [], b""
    try:
        s.sendall(req + req)
        time.sleep(0.05)
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        for i in range(3):
            status, rbody, buf = read_response(s, buf)
            if not status.startswith("HTTP/1.1 200"):
                problems.append(f"response {i + 1}: {status!r} {rbody[:80]!r}")
            elif i < 2 and json.loads(rbody)["usage"]["completion_tokens"] != 40:
                problems.append(f"response {i + 1}: not 40 tokens")
    except (OSError, ValueError, KeyError) as e:
        problems.append(f"{type(e).__name__}: {e}")
    finally:
        s.close()
    if problems:
        fail("pipelined: " + "; ".join(problems))
    else:
        ok("pipelined: 3 requests on one connection, 3 answers (the watch consumed nothing)")


MALFORMED = [
    ("garbage start line", b"GARBAGE\r\n\r\n"),
    ("header line without a colon", b"GET /health HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n"),
    ("bad version", b"GET /health HTTP/1.x\r\nHost: x\r\n\r\n"),
    ("bad Content-Length",
     b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{}"),
    ("conflicting Content-Length",
     b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n"
     b"\r\n{}"),
    ("bad chunk size",
     b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"zz\r\nhello\r\n0\r\n\r\n"),
]


def check_malformed(port):
    for name, raw in MALFORMED:
        data, closed = exchange(port, raw, timeout=5)
        status, headers, body = split_response(data)
        problems = []
        if not status.startswith("HTTP/1.1 400"):
            problems.append(f"status line {status!r}" if data else "no response")
        elif headers.get("connection", "").lower() != "close":
            problems.append(f"Connection: {headers.get('connection')!r}")
        else:
            try:
                if json.loads(body)["error"]["code"] != 400:
                    problems.append("error code")
            except (ValueError, KeyError, TypeError):
                problems.append(f"body {body[:80]!r} is not an error JSON")
        if not closed:
            problems.append("connection left open")
        if problems:
            fail(f"malformed ({name}): " + "; ".join(problems))
        else:
            ok(f"malformed ({name}): 400 + JSON error + close")
    try:
        status, _ = http_get(port, "/health", 5)
        (ok if status == 200 else fail)(f"malformed: /health {status} afterwards")
    except Exception as e:
        fail(f"malformed: /health afterwards: {e}")


def post10(path, body, extra=b""):
    body = json.dumps(body).encode()
    return (b"POST " + path + b" HTTP/1.0\r\nHost: x\r\nContent-Type: application/json\r\n" + extra
            + b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def check_http10(port):
    # Non-stream, no keep-alive: 1.0 status line, Content-Length, no chunking, then close.
    data, closed = exchange(port, post10(b"/v1/completions", {"prompt": "hi", "max_tokens": 5}))
    status, headers, body = split_response(data)
    problems = []
    if not status.startswith("HTTP/1.0 200"):
        problems.append(f"status line {status!r}" if data else "no response")
    if "transfer-encoding" in headers:
        problems.append(f"Transfer-Encoding: {headers['transfer-encoding']}")
    if headers.get("content-length") != str(len(body)):
        problems.append(f"Content-Length {headers.get('content-length')!r}, body {len(body)} B")
    if not closed:
        problems.append("connection left open")
    if problems:
        fail("HTTP/1.0 non-stream: " + "; ".join(problems))
    else:
        ok("HTTP/1.0 non-stream: HTTP/1.0 200, Content-Length, closed")

    # Keep-alive asked for: answered with `Connection: keep-alive`, the connection serves again.
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    problems = []
    try:
        for i in range(2):
            s.sendall(b"GET /health HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n\r\n")
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
            status, headers, body = split_response(data)
            want = int(headers.get("content-length", "-1"))
            while len(body) < want:
                chunk = s.recv(4096)
                if not chunk:
                    break
                body += chunk
            if not status.startswith("HTTP/1.0 200") or \
                    headers.get("connection", "").lower() != "keep-alive":
                problems.append(f"request {i + 1}: {status!r}, Connection "
                                f"{headers.get('connection')!r}")
                break
    except OSError as e:
        problems.append(f"{type(e).__name__}: {e}")
    finally:
        s.close()
    if problems:
        fail("HTTP/1.0 keep-alive: " + "; ".join(problems))
    else:
        ok("HTTP/1.0 keep-alive: two requests on one connection, HTTP/1.0 200 each")

    # Stream: raw SSE bytes (no chunk framing), ended by the close.
    data, closed = exchange(
        port, post10(b"/v1/completions", {"prompt": "hi", "max_tokens": 5, "stream": True}))
    status, headers, body = split_response(data)
    text = body.decode("utf-8", "replace")
    problems = []
    if not status.startswith("HTTP/1.0 200"):
        problems.append(f"status line {status!r}" if data else "no response")
    if "transfer-encoding" in headers or "content-length" in headers:
        problems.append("framing headers " + ", ".join(
            h for h in ("transfer-encoding", "content-length") if h in headers))
    if any(re.fullmatch(r"[0-9a-fA-F]+", line) for line in text.split("\r\n")):
        problems.append("chunk-size lines in the body")
    if not text.startswith("data: ") or not text.endswith("data: [DONE]\n\n"):
        problems.append(f"body is not SSE ending with data: [DONE] ({text[:40]!r}...)")
    if not closed:
        problems.append("connection left open")
    if problems:
        fail("HTTP/1.0 stream: " + "; ".join(problems))
    else:
        ok(f"HTTP/1.0 stream: raw SSE ({text.count('data: ')} events), closed at the end")


def main():
    check, port = sys.argv[1], int(sys.argv[2])
    if check == "fdlimit":
        check_fdlimit(port, int(sys.argv[3]), sys.argv[4])
    elif check == "disconnect":
        check_disconnect(port)
        check_pipelined(port)
    elif check == "malformed":
        check_malformed(port)
    elif check == "http10":
        check_http10(port)
    else:
        sys.exit(f"unknown check {check}")
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
