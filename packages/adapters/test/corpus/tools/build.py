# One-off builder of the corpus (not run by the tests): copies recordings from local mirrors of the
# source repositories (see ../SOURCES.md) and writes each expectation file; the verdicts are the
# hand-written arguments below, texts and usage are read off the recorded provider JSON.
import json, os, subprocess, sys
OUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIRRORS = {
  "vercel/ai": ("/work/.mirror/vercel+ai/repo", "Apache-2.0"),
  "anthropics/anthropic-sdk-typescript": ("/work/.mirror/anthropics+anthropic-sdk-typescript/repo", "MIT"),
  "openai/openai-node": ("/work/.mirror/openai+openai-node/repo", "Apache-2.0"),
}
def commit(repo):
    return subprocess.check_output(["git", "-C", MIRRORS[repo][0], "rev-parse", "HEAD"]).decode().strip()
def show(repo, path):
    return subprocess.check_output(["git", "-C", MIRRORS[repo][0], "show", f"HEAD:{path}"]).decode()

sources = []  # (family, name, origin, path, commit, licence, note)

def http_file(status, headers, body):
    reason = {200:"OK",400:"Bad Request",401:"Unauthorized",402:"Payment Required",403:"Forbidden",404:"Not Found",408:"Request Timeout",409:"Conflict",413:"Payload Too Large",422:"Unprocessable Entity",429:"Too Many Requests",500:"Internal Server Error",502:"Bad Gateway",503:"Service Unavailable",504:"Gateway Timeout",529:"Overloaded"}[status]
    head = f"HTTP/1.1 {status} {reason}\n" + "".join(f"{k}: {v}\n" for k, v in headers.items())
    return head + "\n" + body

def sse_from_chunks(family, text):
    lines = [l for l in text.splitlines() if l.strip()]
    out = []
    if family in ("anthropic", "openai-responses"):
        for l in lines:
            t = json.loads(l).get("type", "message")
            out.append(f"event: {t}\ndata: {l}\n\n")
        return "".join(out)
    if family == "gemini":
        return "".join(f"data: {l}\r\n\r\n" for l in lines)
    return "".join(f"data: {l}\n\n" for l in lines) + "data: [DONE]\n\n"

def write(family, name, status, headers, body, expect, origin, path=None, note=""):
    d = os.path.join(OUT, family)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name + ".http"), "w", newline="") as f:
        f.write(http_file(status, headers, body))
    with open(os.path.join(d, name + ".expect.json"), "w") as f:
        f.write(json.dumps(expect, indent=2, ensure_ascii=False) + "\n")
    if origin == "docs":
        sources.append((family, name, "from docs", path or "", "", "", note))
    else:
        sources.append((family, name, origin, path, commit(origin), MIRRORS[origin][1], note))

SSE = {"content-type": "text/event-stream"}
JSONH = {"content-type": "application/json"}

def rec(family, name, origin, path, stream, expect, convert=True, headers=None, status=200, note="", transform=None):
    raw = show(origin, path)
    if transform: raw = transform(raw)
    body = (sse_from_chunks(family, raw) if convert else raw) if stream else raw
    h = dict(SSE if stream else JSONH)
    if headers: h.update(headers)
    expect = dict(expect)
    expect.setdefault("request", {})
    expect["request"] = {"stream": stream, **expect["request"]}
    write(family, name, status, h, body, expect, origin, path, note)
    return raw

# ---------- semantic extraction (independent of the adapters) ----------
def chat_json_text(o):
    c = o["choices"][0]["message"].get("content")
    if isinstance(c, list):
        return "".join(p.get("text", "") for p in c if p.get("type") == "text") or None
    return c or None
def chat_json_tools(o):
    return [{"name": t["function"]["name"], "arguments": json.loads(t["function"]["arguments"] or "{}")} for t in (o["choices"][0]["message"].get("tool_calls") or [])]
def chat_stream(raw):
    text = ""; calls = {}
    for l in raw.splitlines():
        if not l.strip(): continue
        o = json.loads(l)
        for ch in o.get("choices") or []:
            if ch.get("index", 0) != 0: continue
            d = ch.get("delta") or {}
            c = d.get("content")
            if isinstance(c, str): text += c
            if isinstance(c, list): text += "".join(p.get("text") or "" for p in c if p.get("type") == "text")
            for i, t in enumerate(d.get("tool_calls") or []):
                k = t.get("index", i)
                e = calls.setdefault(k, {"name": "", "args": ""})
                fn = t.get("function") or {}
                if fn.get("name"): e["name"] = e["name"] or fn["name"]
                e["args"] += fn.get("arguments") or ""
    tools = [{"name": v["name"], "arguments": json.loads(v["args"] or "{}")} for k, v in sorted(calls.items())]
    return (text or None), tools
def anth_json(o):
    text = "".join(b["text"] for b in o["content"] if b["type"] == "text") or None
    tools = [{"name": b["name"], "arguments": b.get("input") or {}} for b in o["content"] if b["type"] == "tool_use"]
    return text, tools
def anth_stream(raw):
    text = ""; tools = {}; order = []
    for l in raw.splitlines():
        if not l.startswith("{") and not l.startswith("data: "): continue
        l = l[6:] if l.startswith("data: ") else l
        o = json.loads(l)
        t = o.get("type")
        if t == "content_block_start":
            b = o["content_block"]
            if b["type"] == "text": text += b.get("text", "")
            if b["type"] == "tool_use": tools[o["index"]] = {"name": b["name"], "args": ""}; order.append(o["index"])
        if t == "content_block_delta":
            d = o["delta"]
            if d["type"] == "text_delta": text += d["text"]
            if d["type"] == "input_json_delta" and o["index"] in tools: tools[o["index"]]["args"] += d["partial_json"]
    return (text or None), [{"name": tools[i]["name"], "arguments": json.loads(tools[i]["args"] or "{}")} for i in order]
def gem(objs):
    text = ""; tools = []
    for o in objs:
        for p in ((o.get("candidates") or [{}])[0].get("content") or {}).get("parts") or []:
            if p.get("thought"): continue
            if p.get("text"): text += p["text"]
            if p.get("functionCall"): tools.append({"name": p["functionCall"]["name"], "arguments": p["functionCall"].get("args") or {}})
    return (text or None), tools
def gem_lines(raw): return [json.loads(l) for l in raw.splitlines() if l.strip()]

def chat_usage(u, reasoning_outside=False):
    if not u: return None
    inp = u.get("prompt_tokens") or 0
    out = u.get("completion_tokens") or 0
    reasoning = ((u.get("completion_tokens_details") or {}).get("reasoning_tokens")) or 0
    total = u.get("total_tokens")
    if reasoning_outside or (total is not None and reasoning and total >= inp + out + reasoning and out < reasoning):
        out = out + reasoning
    return {"inputTokens": inp, "cachedInputTokens": ((u.get("prompt_tokens_details") or {}).get("cached_tokens")) or 0, "outputTokens": out, "reasoningTokens": min(reasoning, out)}
def anth_usage(*us):
    c = {}
    for u in us:
        if not u: continue
        for k in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
            if u.get(k) is not None: c[k] = u[k]
        th = (u.get("output_tokens_details") or {}).get("thinking_tokens")
        if th is not None: c["thinking"] = th
    inp = c.get("input_tokens", 0) + c.get("cache_creation_input_tokens", 0) + c.get("cache_read_input_tokens", 0)
    out = c.get("output_tokens", 0)
    return {"inputTokens": inp, "cachedInputTokens": c.get("cache_read_input_tokens", 0), "outputTokens": out, "reasoningTokens": min(c.get("thinking", 0), out)}
def anth_stream_usage(raw):
    us = []
    for l in raw.splitlines():
        l = l[6:] if l.startswith("data: ") else l
        if not l.startswith("{"): continue
        o = json.loads(l)
        if o.get("type") == "message_start": us.append(o["message"].get("usage"))
        if o.get("type") == "message_delta": us.append(o.get("usage"))
    return anth_usage(*us)
def gem_usage(objs):
    u = None
    for o in objs:
        if o.get("usageMetadata") and "promptTokenCount" in o["usageMetadata"]: u = o["usageMetadata"]
    if u is None: return None
    th = u.get("thoughtsTokenCount", 0)
    return {"inputTokens": u.get("promptTokenCount", 0) + u.get("toolUsePromptTokenCount", 0), "cachedInputTokens": u.get("cachedContentTokenCount", 0), "outputTokens": u.get("candidatesTokenCount", 0) + th, "reasoningTokens": th}
def last_chat_usage(raw):
    u = None
    for l in raw.splitlines():
        if l.strip():
            o = json.loads(l)
            if o.get("usage"): u = o["usage"]
    return u

def ok(text, tools, finish, usage=None, refusal=None, workflow=None):
    e = {"finishReason": finish}
    if text is not None: e["text"] = text
    e["toolCalls"] = tools
    if usage is not None: e["usage"] = usage
    if refusal is not None: e["refusal"] = refusal
    out = {"ok": e}
    wf = workflow or ("tools" if tools else "text")
    out["request"] = {"workflow": wf, **({"tools": sorted({t["name"] for t in tools})} if tools else {})}
    return out
def err(kind, gateway, reason=None, retryAfterMs=None, workflow="text", tools=None, status=None):
    e = {"kind": kind, "gateway": gateway}
    if reason: e["reason"] = reason
    if retryAfterMs is not None: e["retryAfterMs"] = retryAfterMs
    if status is not None: e["httpStatus"] = status
    r = {"workflow": workflow}
    if tools: r["tools"] = tools
    return {"error": e, "request": r}

exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "recordings.py")).read())

with open(os.path.join(OUT, "sources.json"), "w") as f:
    json.dump(sources, f, indent=1)
print(len(sources), "recordings")
