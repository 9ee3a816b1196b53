V = "vercel/ai"; A = "anthropics/anthropic-sdk-typescript"
vp = lambda p: "packages/" + p

# ---------------- OpenAI Chat Completions ----------------
o = json.loads(show(V, vp("openai/src/chat/__fixtures__/openai-text.json")))
e = ok(chat_json_text(o), [], "stop", chat_usage(o["usage"])); e["why"] = "plain text answer"
rec("openai-chat", "text", V, vp("openai/src/chat/__fixtures__/openai-text.json"), False, e)
raw = show(V, vp("openai/src/chat/__fixtures__/openai-text.chunks.txt")); t, tl = chat_stream(raw)
e = ok(t, [], "stop", chat_usage(last_chat_usage(raw))); e["why"] = "streamed text, usage-only last chunk"
rec("openai-chat", "text-stream", V, vp("openai/src/chat/__fixtures__/openai-text.chunks.txt"), True, e, note="chunks as `data:` events plus `data: [DONE]`")
e = err("invalid_request", "InvalidRequest", "bad_request", status=400); e["why"] = "400 unsupported_parameter"
rec("openai-chat", "error-400-unsupported-parameter", V, vp("openai/src/chat/__fixtures__/reasoning-model-legacy-parameter-error.json"), False, e, status=400, headers={"x-request-id": "req_corpus_1"})

# ---------------- Azure OpenAI (chat) ----------------
raw = show(V, vp("openai/src/chat/__fixtures__/azure-model-router.1.chunks.txt")); t, tl = chat_stream(raw)
e = ok(t, [], "stop", chat_usage(last_chat_usage(raw))); e["why"] = "Azure model router: first chunk has empty model and prompt_filter_results only; the model is not changing"
rec("azure", "model-router-stream", V, vp("openai/src/chat/__fixtures__/azure-model-router.1.chunks.txt"), True, e)

# ---------------- OpenAI Responses ----------------
def resp_json(o):
    text = ""; tools = []
    for item in o.get("output", []):
        if item["type"] == "message":
            for c in item["content"]:
                if c["type"] == "output_text": text += c["text"]
        if item["type"] == "function_call": tools.append({"name": item["name"], "arguments": json.loads(item["arguments"])})
    u = o.get("usage") or {}
    usage = {"inputTokens": u.get("input_tokens", 0), "cachedInputTokens": (u.get("input_tokens_details") or {}).get("cached_tokens", 0), "outputTokens": u.get("output_tokens", 0), "reasoningTokens": (u.get("output_tokens_details") or {}).get("reasoning_tokens", 0)}
    return (text or None), tools, usage
def resp_stream(raw):
    # A streaming client shows the deltas (some fixtures trimmed them; the final object is whole).
    final = None; deltas = ""
    for l in raw.splitlines():
        if l.strip():
            ev = json.loads(l)
            if ev["type"] in ("response.completed", "response.incomplete"): final = ev["response"]
            if ev["type"] == "response.output_text.delta": deltas += ev["delta"]
    _, tools, usage = resp_json(final)
    return (deltas or None), tools, usage
for name, path, stream in [
    ("text-phase", "openai/src/responses/__fixtures__/openai-phase.1.json", False),
    ("text-phase-stream", "openai/src/responses/__fixtures__/openai-phase.1.chunks.txt", True),
    ("reasoning-encrypted", "openai/src/responses/__fixtures__/openai-reasoning-encrypted-content.1.json", False),
    ("azure-text", "azure/src/__fixtures__/azure-text.1.json", False),
    ("azure-text-stream", "azure/src/__fixtures__/azure-text.1.chunks.txt", True),
    ("azure-tool-call", "azure/src/__fixtures__/azure-tool-call.1.json", False),
    ("azure-tool-call-stream", "azure/src/__fixtures__/azure-tool-call.1.chunks.txt", True),
]:
    raw = show(V, vp(path))
    t, tl, u = resp_stream(raw) if stream else resp_json(json.loads(raw))
    e = ok(t, tl, "tool_calls" if tl else "stop", u); e["why"] = "Responses API: " + name
    rec("openai-responses", name, V, vp(path), stream, e)
def first_response(raw):
    out = []
    for l in raw.splitlines():
        if not l.strip(): continue
        out.append(l)
        if json.loads(l)["type"] == "response.completed": break
    return "\n".join(out) + "\n"
path = vp("openai/src/responses/__fixtures__/openai-reasoning-encrypted-content.1.chunks.txt")
raw = first_response(show(V, path)); t, tl, u = resp_stream(raw)
e = ok(t, tl, "tool_calls", u); e["why"] = "reasoning summary then a function call (the fixture holds four turns; the first response is kept)"
rec("openai-responses", "reasoning-encrypted-stream", V, path, True, e, transform=first_response, note="first response only (up to its response.completed)")
e = err("invalid_request", "InvalidRequest", "bad_request", status=400); e["why"] = "400 unsupported temperature on a reasoning model"
rec("openai-responses", "error-400-temperature", V, vp("openai/src/responses/__fixtures__/reasoning-model-temperature-error.json"), False, e, status=400)
e = err("quota_exhausted", "ProviderRejected", "quota_exhausted"); e["why"] = "nested error event {type:error, error:{code:insufficient_quota}} then response.failed: quota, never retried (defect class 5)"
rec("openai-responses", "error-event-insufficient-quota", V, vp("openai/src/responses/__fixtures__/openai-error.1.chunks.txt"), True, e)

# ---------------- Anthropic ----------------
AF = "anthropic/src/__fixtures__/"
def anth_rec(name, base, finish=None, why="", workflow=None, error=None, json_only=False, stream_only=False):
    for stream in ([True] if stream_only else [False] if json_only else [False, True]):
        path = vp(AF + base + (".chunks.txt" if stream else ".json"))
        raw = show(V, path)
        if error is not None:
            e = dict(error); e["why"] = why
        elif stream:
            t, tl = anth_stream(raw); e = ok(t, tl, finish, anth_stream_usage(raw), workflow=workflow); e["why"] = why
        else:
            o = json.loads(raw); t, tl = anth_json(o); e = ok(t, tl, finish, anth_usage(o.get("usage")), workflow=workflow); e["why"] = why
        rec("anthropic", name + ("-stream" if stream else ""), V, path, stream, e)
anth_rec("text", "anthropic-text", "stop", "plain text, cache counters present")
anth_rec("tool-no-args", "anthropic-tool-no-args", "tool_calls", "a tool_use with empty input: arguments {}")
anth_rec("refusal", "anthropic-refusal", "refusal", "stop_reason refusal")
anth_rec("refusal-no-details", "anthropic-refusal-no-details", "refusal", "stop_reason refusal without stop_details", json_only=True)
anth_rec("json-tool", "anthropic-json-tool.1", "tool_calls", "structured answer through a json tool")
anth_rec("json-tool-2", "anthropic-json-tool.2", "tool_calls", "json tool, streamed argument deltas", stream_only=True)
anth_rec("json-other-tool", "anthropic-json-other-tool.1", "tool_calls", "the model picked another tool than the json one")
anth_rec("message-delta-input-tokens", "anthropic-message-delta-input-tokens", "stop", "input_tokens repeated in message_delta", stream_only=True)
anth_rec("clear-thinking", "anthropic-clear-thinking.1", "stop", "thinking blocks are not text")
anth_rec("fallback", "anthropic-fallback", None, "", stream_only=False) if False else None
anth_rec("json-output-format", "anthropic-json-output-format.1", "stop", "output_format json: the text is the JSON", workflow="structured")
e = err("invalid_output", "InvalidOutput", workflow="tools", tools=["test-tool"])
anth_rec("duplicate-message-start", "duplicate-message-start", error=e, why="a second message_start mid-stream must fail the attempt (defect class 4)", stream_only=True)
anth_rec("spliced-message-start", "spliced-message-start", error=e, why="two messages spliced: a cut-off tool call then a second message_start (defect class 4)", stream_only=True)

SD = "tests/lib/fixtures/"
for name, path, finish, why, wf in [
    ("sdk-basic-stream", "tests/lib/fixtures/basic_response.txt", "stop", "the SDK's basic stream (pings, CRLF-free frames)", None),
    ("sdk-tool-use-stream", "tests/lib/fixtures/tool_use_response.txt", "tool_calls", "text then a tool call with argument deltas", None),
    ("sdk-refusal-stream", "tests/fixtures/fable-fallback/stream-a-refusal.sse", "refusal", "thinking then refusal with stop_details", None),
    ("sdk-tool-refusal-stream", "tests/fixtures/fable-fallback/stream-a-toolrefusal.sse", "refusal", "refusal during a tool call", None),
    ("sdk-fallback-stream", "tests/fixtures/fable-fallback/stream-b-fallback.sse", "stop", "the fallback model's answer", None),
]:
    raw = show(A, path)
    t, tl = anth_stream(raw)
    if finish == "refusal": tl = []  # a refused answer carries no usable tool call
    e = ok(t, tl, finish, anth_stream_usage(raw), workflow=wf); e["why"] = why
    rec("anthropic", name, A, path, True, e, convert=False)
raw = show(A, "tests/lib/fixtures/incomplete_partial_json_response.txt")
e = err("invalid_output", "InvalidOutput", workflow="tools", tools=["make_file"]); e["why"] = "max_tokens in the middle of a tool_use: arguments are not JSON, never a success (defect class 3)"
rec("anthropic", "sdk-max-tokens-mid-tool-stream", A, "tests/lib/fixtures/incomplete_partial_json_response.txt", True, e, convert=False)

# ---------------- Gemini ----------------
GF = "google/src/__fixtures__/"
for name, base, finish, why, both in [
    ("text", "google-text", "stop", "plain text", True),
    ("tool-call", "google-tool-call", "tool_calls", "a functionCall part", True),
    ("reasoning", "google-reasoning", "stop", "thought parts are not text; thoughtsTokenCount is output", True),
    ("reasoning-gemini3", "google-reasoning-gemini3", "stop", "gemini 3 thought signatures", True),
    ("tool-call-gemini3", "google-tool-call-gemini3", "tool_calls", "gemini 3 functionCall with thoughtSignature", True),
]:
    for stream in [False, True]:
        path = vp(GF + base + (".chunks.txt" if stream else ".json"))
        raw = show(V, path)
        objs = gem_lines(raw) if stream else [json.loads(raw)]
        t, tl = gem(objs)
        e = ok(t, tl, finish, gem_usage(objs)); e["why"] = why
        rec("gemini", name + ("-stream" if stream else ""), V, path, stream, e)
path = vp(GF + "google-429-retry-info.json")
e = err("rate_limited", "RateLimited", retryAfterMs=34400, status=429); e["why"] = "429 with a PerMinute quotaId and RetryInfo 34.4s"
rec("gemini", "error-429-retry-info", V, path, False, e, status=429)

# ---------------- OpenAI-compatible vendors ----------------
def compat(family, name, path, finish=None, why="", workflow=None, error=None, stream=None, reasoning_outside=False, status=200):
    raw = show(V, vp(path))
    s = path.endswith(".chunks.txt") if stream is None else stream
    if error is not None:
        e = dict(error)
    elif s:
        t, tl = chat_stream(raw); e = ok(t, tl, finish, chat_usage(last_chat_usage(raw), reasoning_outside), workflow=workflow)
    else:
        o = json.loads(raw); e = ok(chat_json_text(o), chat_json_tools(o), finish, chat_usage(o.get("usage"), reasoning_outside), workflow=workflow)
    e["why"] = why
    rec(family, name, V, vp(path), s, e, status=status)
DS = "deepseek/src/chat/__fixtures__/"
compat("deepseek", "json", DS + "deepseek-json.json", "stop", "JSON answer with reasoning_content; cached prompt tokens", workflow="structured")
compat("deepseek", "reasoning", DS + "deepseek-reasoning.json", "stop", "reasoning_content is not text")
compat("deepseek", "reasoning-stream", DS + "deepseek-reasoning.chunks.txt", "stop", "streamed reasoning_content then content")
compat("deepseek", "text", DS + "deepseek-text.json", "length", "plain text stopped at max tokens (finish_reason length): a text answer says length")
compat("deepseek", "tool-call", DS + "deepseek-tool-call.json", "tool_calls", "tool call")
compat("deepseek", "tool-call-stream", DS + "deepseek-tool-call.chunks.txt", "tool_calls", "streamed tool-call argument deltas")
GQ = "groq/src/__fixtures__/"
compat("groq", "tool-call", GQ + "groq-tool-call.json", "tool_calls", "tool call with arguments {}")
compat("groq", "tool-call-stream", GQ + "groq-tool-call.chunks.txt", "tool_calls", "tool call in one delta, x_groq usage")
compat("groq", "text", GQ + "groq-text.json", "stop", "plain text")
compat("groq", "reasoning", GQ + "groq-reasoning.json", "stop", "reasoning field is not text")
MI = "mistral/src/__fixtures__/"
compat("mistral", "text", MI + "mistral-text.json", "stop", "plain text")
compat("mistral", "text-stream", MI + "mistral-text.chunks.txt", "stop", "streamed text")
compat("mistral", "tool-call", MI + "mistral-tool-call.json", "tool_calls", "tool call")
compat("mistral", "tool-call-stream", MI + "mistral-tool-call.chunks.txt", "tool_calls", "tool call in one delta")
compat("mistral", "incremental-tool-call-stream", MI + "mistral-incremental-tool-call.chunks.txt", "tool_calls", "tool name first, arguments later with name \"\"")
compat("mistral", "reasoning", MI + "mistral-reasoning.json", "stop", "magistral: content is an array of thinking and text parts")
compat("mistral", "reasoning-stream", MI + "mistral-reasoning.chunks.txt", "stop", "magistral: streamed content parts")
XO = "openai-compatible/src/chat/__fixtures__/"
compat("xai", "text", XO + "xai-text.json", "stop", "total_tokens = prompt + completion + reasoning: reasoning is outside completion (defect class 2)", reasoning_outside=True)
compat("xai", "tool-call", XO + "xai-tool-call.json", "tool_calls", "reasoning outside completion, tool call", reasoning_outside=True)
compat("xai", "tool-call-stream", XO + "xai-tool-call.chunks.txt", "tool_calls", "streamed, reasoning outside completion", reasoning_outside=True)
XF = "xai/src/__fixtures__/"
compat("xai", "text-2", XF + "xai-text.json", "stop", "grok chat completion", reasoning_outside=True)
compat("xai", "text-2-stream", XF + "xai-text.chunks.txt", "stop", "grok streamed", reasoning_outside=True)
compat("xai", "tool-call-2", XF + "xai-tool-call.json", "tool_calls", "grok tool call", reasoning_outside=True)
compat("xai", "tool-call-2-stream", XF + "xai-tool-call.chunks.txt", "tool_calls", "grok streamed tool call", reasoning_outside=True)
MO = "moonshotai/src/__fixtures__/"
compat("moonshot", "text", MO + "moonshotai-text.json", "stop", "kimi text")
compat("moonshot", "reasoning", MO + "moonshotai-reasoning.json", "stop", "kimi reasoning_content")
compat("moonshot", "tool-call", MO + "moonshotai-tool-call.json", "tool_calls", "kimi tool call")
compat("moonshot", "stream", MO + "moonshotai-stream.chunks.txt", "stop", "finish_reason and usage on the last content chunk")
AL = "alibaba/src/__fixtures__/"
compat("alibaba", "tool-call", AL + "alibaba-tool-call.json", "tool_calls", "qwen tool call")
compat("alibaba", "tool-call-stream", AL + "alibaba-tool-call.chunks.txt", "tool_calls", "later deltas carry id \"\": the first id stays")

# ---------------- from docs ----------------
GW = {"rate_limited": ("RateLimited", None), "server_error": ("ProviderUnavailable", "server_error"), "overloaded": ("ProviderUnavailable", "overloaded"),
      "timeout": ("ProviderUnavailable", "timeout"), "stream_truncated": ("ProviderUnavailable", "stream_truncated"), "invalid_request": ("InvalidRequest", "bad_request"),
      "context_length": ("InvalidRequest", "context_length"), "authentication": ("ProviderRejected", "authentication"), "permission": ("ProviderRejected", "permission"),
      "quota_exhausted": ("ProviderRejected", "quota_exhausted"), "spend_cap": ("ProviderRejected", "spend_cap"), "model_not_found": ("ProviderRejected", "model_not_found"),
      "request_too_large": ("ProviderRejected", "request_too_large"), "refusal": ("Refusal", "safety_filter"), "invalid_output": ("InvalidOutput", None), "rejected": ("ProviderRejected", "other")}
def doc(family, name, status, body, why, kind=None, okv=None, headers=None, stream=False, retry=None, workflow="text", tools=None, ref=""):
    h = dict(SSE if stream else JSONH)
    if headers: h.update(headers)
    if kind is not None:
        g, r = GW[kind]
        e = err(kind, g, r, retryAfterMs=retry, workflow=workflow, tools=tools, status=status if status != 200 else None)
    else:
        e = okv
    e["why"] = why
    e["request"] = {"stream": stream, **e["request"]}
    write(family, name, status, h, body if isinstance(body, str) else json.dumps(body), e, "docs", ref, "")
def oai(type_, code, message="(message)", param=None): return {"error": {"message": message, "type": type_, "param": param, "code": code}}
def chunk(delta=None, finish=None, model="gpt-4.1-mini-2025-04-14", usage=None, choices=True):
    o = {"id": "chatcmpl-corpus", "object": "chat.completion.chunk", "created": 1750000000, "model": model, "choices": ([{"index": 0, "delta": delta or {}, "finish_reason": finish}] if choices else [])}
    if usage is not None: o["usage"] = usage
    return "data: " + json.dumps(o) + "\n\n"
def completion(message, finish, usage=None, model="gpt-4.1-mini-2025-04-14"):
    return {"id": "chatcmpl-corpus", "object": "chat.completion", "created": 1750000000, "model": model, "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}], "usage": usage or {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}}
U = lambda i, o, c=0, r=0: {"inputTokens": i, "cachedInputTokens": c, "outputTokens": o, "reasoningTokens": r}
REF_OAI = "providers.md §2 OpenAI; platform.openai.com/docs/guides/error-codes"
F = "openai-chat"
doc(F, "error-401-invalid-api-key", 401, oai("invalid_request_error", "invalid_api_key"), "bad key", "authentication", ref=REF_OAI)
doc(F, "error-403-unsupported-region", 403, oai("invalid_request_error", "unsupported_country_region_territory"), "country not supported", "permission", ref=REF_OAI)
doc(F, "error-404-model-not-found", 404, oai("invalid_request_error", "model_not_found"), "missing model", "model_not_found", ref=REF_OAI)
doc(F, "error-408", 408, oai("invalid_request_error", None), "request timeout status", "timeout", ref=REF_OAI)
doc(F, "error-409", 409, oai("invalid_request_error", None), "conflict: temporary", "server_error", ref=REF_OAI)
doc(F, "error-413", 413, "<html><body>413 Request Entity Too Large</body></html>", "proxy HTML 413", "request_too_large", headers={"content-type": "text/html"}, ref=REF_OAI)
doc(F, "error-422", 422, oai("invalid_request_error", "invalid_value"), "unprocessable", "invalid_request", ref=REF_OAI)
doc(F, "error-429-rate-limit", 429, oai("tokens", "rate_limit_exceeded", "Rate limit reached ... Please try again in 1.574s."), "TPM rate limit with retry-after-ms", "rate_limited", headers={"retry-after-ms": "1574", "retry-after": "2"}, retry=1574, ref=REF_OAI)
doc(F, "error-429-insufficient-quota", 429, oai("insufficient_quota", "insufficient_quota"), "quota: not retried", "quota_exhausted", ref=REF_OAI)
doc(F, "error-429-request-too-large", 429, oai("tokens", "rate_limit_exceeded", "Request too large for gpt-4.1 on tokens per min (TPM): Limit 30000, Requested 45000."), "one request above the TPM limit: permanent", "request_too_large", ref=REF_OAI)
doc(F, "error-429-spend-limit", 429, oai("insufficient_quota", "organization_spend_limit_exceeded"), "spend cap", "spend_cap", ref=REF_OAI)
doc(F, "error-500", 500, oai("server_error", None), "server error", "server_error", ref=REF_OAI)
doc(F, "error-502-html", 502, "<html><head><title>502 Bad Gateway</title></head></html>", "Cloudflare 502 page", "server_error", headers={"content-type": "text/html"}, ref=REF_OAI)
doc(F, "error-503-overloaded", 503, oai("service_unavailable_error", "server_is_overloaded"), "overloaded", "overloaded", ref=REF_OAI)
doc(F, "error-504", 504, oai("server_error", None), "gateway timeout", "timeout", ref=REF_OAI)
doc(F, "error-400-context-length", 400, oai("invalid_request_error", "context_length_exceeded", "This model's maximum context length is 128000 tokens."), "context length", "context_length", ref=REF_OAI)
doc(F, "error-400-invalid-prompt", 400, oai("invalid_request_error", "invalid_prompt", "Invalid prompt: your prompt was flagged as potentially violating our usage policy."), "input moderation: a safety refusal", "refusal", ref=REF_OAI)
doc(F, "error-400-content-policy-violation", 400, oai("invalid_request_error", "content_policy_violation", "Your request was rejected as a result of our safety system."), "content_policy_violation: a safety-filter block is Refusal (defect class 1)", "refusal", ref=REF_OAI)
doc(F, "refusal", 200, completion({"content": None, "refusal": "I can't help with that."}, "stop"), "message.refusal set", okv=ok(None, [], "refusal", U(20, 5), refusal=True), ref="providers.md §7")
doc(F, "content-filter-finish", 200, completion({"content": ""}, "content_filter"), "finish_reason content_filter", okv=ok(None, [], "content_filter", U(20, 5), refusal=True), ref="providers.md §9")
doc(F, "length-text", 200, completion({"content": "The first part of a long"}, "length"), "text cut at max tokens: finishReason length", okv=ok("The first part of a long", [], "length", U(20, 5)), ref="providers.md §9")
doc(F, "length-structured", 200, completion({"content": "{\"a\": \"tru"}, "length"), "structured output cut at max tokens: InvalidOutput", "invalid_output", workflow="structured", ref="providers.md §9")
doc(F, "structured", 200, completion({"content": "{\"a\":\"yes\"}"}, "stop"), "structured output", okv=ok("{\"a\":\"yes\"}", [], "stop", U(20, 5), workflow="structured"), ref="providers.md §5")
doc(F, "parallel-tools-stream", 200,
    chunk({"role": "assistant", "content": None}) +
    chunk({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "lookup", "arguments": ""}}]}) +
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{\"q\":"}}]}) +
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": "\"a\"}"}}]}) +
    chunk({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "lookup", "arguments": ""}}]}) +
    chunk({"tool_calls": [{"index": 1, "function": {"arguments": "{\"q\":\"b\"}"}}]}) +
    chunk({}, "tool_calls") + chunk(None, usage={"prompt_tokens": 50, "completion_tokens": 30, "total_tokens": 80, "prompt_tokens_details": {"cached_tokens": 32}, "completion_tokens_details": {"reasoning_tokens": 10}}, choices=False) + "data: [DONE]\n\n",
    "two parallel tool calls with streamed argument deltas; cached and reasoning usage", okv=ok(None, [{"name": "lookup", "arguments": {"q": "a"}}, {"name": "lookup", "arguments": {"q": "b"}}], "tool_calls", U(50, 30, 32, 10)), stream=True, ref="providers.md §6 OpenAI Chat")
doc(F, "length-mid-tool-call-stream", 200,
    chunk({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\":\"abc"}}]}) + chunk({}, "length") + "data: [DONE]\n\n",
    "finish_reason length inside a tool call: arguments are not JSON (defect class 3)", "invalid_output", stream=True, workflow="tools", tools=["lookup"], ref="providers.md §9")
doc(F, "tool-args-not-json", 200, completion({"content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{q: 1"}}]}, "tool_calls"),
    "tool-call arguments that do not parse: InvalidOutput (defect class 3)", "invalid_output", workflow="tools", tools=["lookup"], ref="providers.md §9")
doc(F, "tool-args-schema-mismatch", 200, completion({"content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{\"query\": 1}"}}]}, "tool_calls"),
    "arguments parse but miss the tool schema's required q: InvalidOutput (defect class 3)", "invalid_output", workflow="tools", tools=["lookup"], ref="providers.md §9")
doc(F, "error-event-mid-stream", 200, chunk({"content": "Hel"}) + "data: " + json.dumps({"error": {"message": "The server had an error", "type": "server_error", "code": None}}) + "\n\n",
    "error object mid-stream: temporary", "server_error", stream=True, ref="providers.md §9")
doc(F, "truncated-stream", 200, chunk({"content": "Hello"}) + chunk({"content": " wor"}), "the body ends before [DONE]", "stream_truncated", stream=True, ref="providers.md §9")
doc(F, "malformed-chunk", 200, chunk({"content": "Hi"}) + "data: {\"id\":\"x\",\"choices\":[{\"delta\":{\"content\n\n" + "data: [DONE]\n\n", "a chunk that is not JSON", "invalid_output", stream=True, ref="providers.md §6")
doc(F, "model-change-mid-stream", 200, chunk({"content": "Hello"}) + chunk({"content": " there"}, model="gpt-4o-2024-08-06") + chunk({}, "stop") + "data: [DONE]\n\n",
    "a stream that changes model mid-way fails the attempt", "invalid_output", stream=True, ref="issue 24")
doc(F, "duplicate-tool-index-stream", 200,
    chunk({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\":\"a\"}"}}]}) +
    chunk({"tool_calls": [{"index": 0, "id": "call_b", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\":\"b\"}"}}]}) + chunk({}, "tool_calls") + "data: [DONE]\n\n",
    "a second tool call opened on an index already used (a new id): fails the attempt", "invalid_output", stream=True, workflow="tools", tools=["lookup"], ref="issue 24")
doc(F, "out-of-order-tool-index-stream", 200,
    chunk({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\":\"b\"}"}}]}) +
    chunk({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\":\"a\"}"}}]}) + chunk({}, "tool_calls") + "data: [DONE]\n\n",
    "tool-call index going backwards (1 then 0): fails the attempt", "invalid_output", stream=True, workflow="tools", tools=["lookup"], ref="issue 24")

REF_AZ = "learn.microsoft.com/azure/ai-services/openai/concepts/content-filter"
doc("azure", "error-400-content-filter", 400, {"error": {"message": "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.", "type": None, "param": "prompt", "code": "content_filter", "status": 400,
    "innererror": {"code": "ResponsibleAIPolicyViolation", "content_filter_result": {"hate": {"filtered": False, "severity": "safe"}, "violence": {"filtered": True, "severity": "high"}}}}},
    "Azure prompt filter: Refusal, not a bad request (defect class 1)", "refusal", ref=REF_AZ)
doc("azure", "content-filter-stream", 200, chunk({"content": "Once upon"}) + chunk({}, "content_filter") + "data: [DONE]\n\n", "output filter: finish_reason content_filter", okv=ok("Once upon", [], "content_filter", refusal=True), stream=True, ref=REF_AZ)
doc("azure", "error-429-retry-after", 429, {"error": {"code": "429", "message": "Requests to the ChatCompletions_Create Operation have exceeded call rate limit. Please retry after 7 seconds."}}, "Azure 429 with retry-after seconds", "rate_limited", headers={"retry-after": "7"}, retry=7000, ref="learn.microsoft.com/azure/ai-services/openai/quotas-limits")
doc("azure", "error-401", 401, {"error": {"code": "401", "message": "Access denied due to invalid subscription key or wrong API endpoint."}}, "bad key", "authentication", ref="Azure OpenAI REST reference")
doc("azure", "error-404-deployment", 404, {"error": {"code": "DeploymentNotFound", "message": "The API deployment for this resource does not exist."}}, "missing deployment", "model_not_found", ref="Azure OpenAI REST reference")

doc("groq", "error-400-tool-use-failed", 400, {"error": {"message": "Failed to call a function. Please adjust your prompt.", "type": "invalid_request_error", "code": "tool_use_failed", "failed_generation": "<function=lookup>{\"q\": }</function>"}},
    "the model produced a bad tool call: InvalidOutput (another model may do better), not a bad request", "invalid_output", workflow="tools", tools=["lookup"], ref="console.groq.com/docs/errors")
doc("groq", "error-429", 429, {"error": {"message": "Rate limit reached for model on tokens per minute (TPM). Please try again in 2.5s.", "type": "tokens", "code": "rate_limit_exceeded"}}, "rate limit", "rate_limited", headers={"retry-after": "3"}, retry=3000, ref="console.groq.com/docs/rate-limits")
doc("groq", "error-503", 503, {"error": {"message": "Service Unavailable", "type": "internal_server_error"}}, "overloaded", "overloaded", ref="console.groq.com/docs/errors")
doc("groq", "error-413-context", 413, {"error": {"message": "Request too large for model", "type": "invalid_request_error", "code": "request_too_large"}}, "request too large", "request_too_large", ref="console.groq.com/docs/errors")

doc("deepseek", "error-402-insufficient-balance", 402, {"error": {"message": "Insufficient Balance", "type": "unknown_error", "param": None, "code": "invalid_request_error"}}, "402 insufficient balance: quota", "quota_exhausted", ref="api-docs.deepseek.com/quick_start/error_codes")
doc("deepseek", "error-422", 422, {"error": {"message": "Invalid parameters", "type": "invalid_request_error", "param": None, "code": "invalid_request_error"}}, "invalid parameters", "invalid_request", ref="api-docs.deepseek.com/quick_start/error_codes")
doc("deepseek", "error-503-server-busy", 503, {"error": {"message": "Server overloaded, please retry shortly.", "type": "server_error", "code": None}}, "server busy", "overloaded", ref="api-docs.deepseek.com/quick_start/error_codes")

doc("together", "error-429", 429, {"id": "x", "error": {"message": "You have been rate limited.", "type": "rate_limit", "param": None, "code": None}}, "rate limit", "rate_limited", headers={"retry-after": "1"}, retry=1000, ref="docs.together.ai/docs/error-codes")
doc("together", "error-500", 500, {"error": {"message": "Internal server error", "type": "server_error", "code": None}}, "server error", "server_error", ref="docs.together.ai/docs/error-codes")
doc("together", "error-401", 401, {"error": {"message": "Invalid API key provided.", "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}}, "bad key", "authentication", ref="docs.together.ai/docs/error-codes")
doc("together", "text-stream", 200, chunk({"role": "assistant", "content": ""}, model="meta-llama/Llama-3.3-70B-Instruct-Turbo") + chunk({"content": "Hi!"}, model="meta-llama/Llama-3.3-70B-Instruct-Turbo") + chunk({}, "stop", model="meta-llama/Llama-3.3-70B-Instruct-Turbo", usage={"prompt_tokens": 8, "completion_tokens": 3, "total_tokens": 11}) + "data: [DONE]\n\n",
    "usage on the finishing chunk", okv=ok("Hi!", [], "stop", U(8, 3)), stream=True, ref="docs.together.ai/reference/chat-completions")

REF_OR = "openrouter.ai/docs/api-reference/errors"
doc("openrouter", "error-402-credits", 402, {"error": {"code": 402, "message": "Insufficient credits. Add more using https://openrouter.ai/credits"}}, "out of credits", "quota_exhausted", ref=REF_OR)
doc("openrouter", "error-408", 408, {"error": {"code": 408, "message": "Request timed out"}}, "timeout", "timeout", ref=REF_OR)
doc("openrouter", "error-502-upstream", 502, {"error": {"code": 502, "message": "Provider returned error", "metadata": {"provider_name": "x"}}}, "upstream provider down", "server_error", ref=REF_OR)
doc("openrouter", "error-403-moderation", 403, {"error": {"code": 403, "message": "Input was flagged", "metadata": {"reasons": ["violence"], "flagged_input": "...", "provider_name": "OpenAI", "model_slug": "openai/gpt-4o"}}}, "moderation flag: a safety refusal", "refusal", ref=REF_OR)
doc("openrouter", "mid-stream-error", 200, ": OPENROUTER PROCESSING\n\n" + chunk({"content": "Partial"}, model="openai/gpt-4o") + "data: " + json.dumps({"id": "gen-1", "object": "chat.completion.chunk", "created": 1750000000, "model": "openai/gpt-4o", "error": {"code": "server_error", "message": "Provider disconnected unexpectedly"}, "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]}) + "\n\n",
    "error chunk with finish_reason error after partial text: temporary", "server_error", stream=True, ref="openrouter.ai/docs/api-reference/streaming")

REF_VLLM = "providers.md §8 vLLM"
doc("vllm", "error-400-context-flat", 400, {"object": "error", "message": "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.", "type": "BadRequestError", "param": None, "code": 400}, "old flat error shape, context overflow in the message", "context_length", ref=REF_VLLM)
doc("vllm", "error-404-model", 404, {"error": {"message": "The model `llama` does not exist.", "type": "NotFoundError", "param": None, "code": 404}}, "unknown model", "model_not_found", ref=REF_VLLM)
doc("vllm", "mid-stream-error", 200, chunk({"content": "a"}, model="llama") + "data: " + json.dumps({"error": {"message": "internal", "type": "InternalServerError", "param": None, "code": 500}}) + "\n\n", "error event with code 500 after 200", "server_error", stream=True, ref=REF_VLLM)
doc("vllm", "length-text", 200, completion({"content": "Truncated answ"}, "length", model="llama"), "length stop on a text workflow", okv=ok("Truncated answ", [], "length", U(20, 5)), ref=REF_VLLM)
REF_OL = "providers.md §8 Ollama"
doc("ollama", "error-404-pull", 404, {"error": {"message": "model \"llama3\" not found, try pulling it first", "type": "api_error", "param": None, "code": None}}, "model not pulled", "model_not_found", ref=REF_OL)
doc("ollama", "error-503-busy", 503, {"error": {"message": "server busy, please try again.  maximum pending requests exceeded", "type": "api_error", "param": None, "code": None}}, "server busy: temporary, no retry-after", "overloaded", ref=REF_OL)
doc("ollama", "error-500", 500, {"error": {"message": "llama runner process has terminated", "type": "api_error", "param": None, "code": None}}, "runner crash", "server_error", ref=REF_OL)
doc("ollama", "text-stream-no-usage", 200, chunk({"role": "assistant", "content": "Hello"}, model="llama3.2") + chunk({"content": ""}, "stop", model="llama3.2") + "data: [DONE]", "no usage chunk; last [DONE] without a blank line", okv=ok("Hello", [], "stop"), stream=True, ref=REF_OL)

def anth_err(t, msg="(message)", details=None):
    e = {"type": t, "message": msg}
    if details: e["details"] = details
    return {"type": "error", "error": e, "request_id": "req_011CORPUS"}
REF_AN = "docs.anthropic.com/en/api/errors; providers.md §2 Anthropic"
F = "anthropic"
doc(F, "error-400-prompt-too-long", 400, anth_err("invalid_request_error", "prompt is too long: 213462 tokens > 200000 maximum"), "context overflow", "context_length", ref=REF_AN)
doc(F, "error-400-usage-limits", 400, anth_err("invalid_request_error", "You have reached your specified API usage limits."), "workspace spend limit", "spend_cap", ref=REF_AN)
doc(F, "error-401", 401, anth_err("authentication_error", "invalid x-api-key"), "bad key", "authentication", ref=REF_AN)
doc(F, "error-402-billing", 402, anth_err("billing_error"), "billing", "quota_exhausted", ref=REF_AN)
doc(F, "error-403", 403, anth_err("permission_error"), "permission", "permission", ref=REF_AN)
doc(F, "error-404", 404, anth_err("not_found_error", "model: claude-x"), "unknown model", "model_not_found", ref=REF_AN)
doc(F, "error-413-cloudflare", 413, "<html><head><title>413 Request Entity Too Large</title></head><body>cloudflare</body></html>", "413 from Cloudflare, HTML body", "request_too_large", headers={"content-type": "text/html"}, ref=REF_AN)
doc(F, "error-429-retry-after", 429, anth_err("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"), "rate limit with retry-after seconds", "rate_limited", headers={"retry-after": "12"}, retry=12000, ref=REF_AN)
doc(F, "error-429-enforced-spend-limit", 429, anth_err("rate_limit_error", "monthly spend limit", {"error_code": "enforced_spend_limit_reached"}), "tier spend cap: not a rate limit", "spend_cap", ref=REF_AN)
doc(F, "error-500", 500, anth_err("api_error", "Internal server error"), "api error", "server_error", ref=REF_AN)
doc(F, "error-504", 504, anth_err("timeout_error"), "timeout", "timeout", ref=REF_AN)
doc(F, "error-529-overloaded", 529, anth_err("overloaded_error", "Overloaded"), "overloaded", "overloaded", ref=REF_AN)
def aev(o): return f"event: {o['type']}\ndata: {json.dumps(o)}\n\n"
MS = {"type": "message_start", "message": {"id": "msg_corpus", "type": "message", "role": "assistant", "content": [], "model": "claude-sonnet-4-5", "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "cache_read_input_tokens": 0, "output_tokens": 1}}}
TB = lambda i: {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}}
TD = lambda i, t: {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": t}}
BS = lambda i: {"type": "content_block_stop", "index": i}
MD = lambda stop, out: {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": out}}
STOP = {"type": "message_stop"}
doc(F, "error-event-overloaded-stream", 200, aev(MS) + aev(TB(0)) + aev(TD(0, "Hi")) + "event: error\ndata: " + json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}) + "\n\n",
    "event: error after 200: overloaded", "overloaded", stream=True, ref="docs.anthropic.com/en/docs/build-with-claude/streaming#error-events")
doc(F, "error-event-flat-stream", 200, aev(MS) + "event: error\ndata: " + json.dumps({"type": "overloaded_error", "message": "Overloaded"}) + "\n\n",
    "an error event whose data is the error object itself (flat shape, as proxies send it): classified by its type", "overloaded", stream=True, ref="issue 24 (flat and nested shapes)")
doc(F, "truncated-stream", 200, aev(MS) + aev(TB(0)) + aev(TD(0, "Hello")), "the body ends before message_stop", "stream_truncated", stream=True, ref=REF_AN)
doc(F, "max-tokens-text-stream", 200, aev(MS) + aev(TB(0)) + aev(TD(0, "A long answer that")) + aev(BS(0)) + aev(MD("max_tokens", 16)) + aev(STOP),
    "max_tokens on text: finishReason length", okv=ok("A long answer that", [], "length", U(10, 16)), stream=True, ref=REF_AN)
doc(F, "max-tokens-structured", 200, {"id": "msg_c", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": "{\"a\": \"ye"}], "stop_reason": "max_tokens", "usage": {"input_tokens": 10, "output_tokens": 16}},
    "max_tokens on a structured workflow: InvalidOutput", "invalid_output", workflow="structured", ref=REF_AN)
doc(F, "context-window-exceeded", 200, {"id": "msg_c", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": "partial"}], "stop_reason": "model_context_window_exceeded", "usage": {"input_tokens": 199990, "output_tokens": 10}},
    "output stopped at the context window", "context_length", ref=REF_AN)
doc(F, "duplicate-block-index-stream", 200, aev(MS) + aev(TB(0)) + aev(TD(0, "a")) + aev(BS(0)) + aev(TB(0)) + aev(TD(0, "b")) + aev(BS(0)) + aev(MD("end_turn", 2)) + aev(STOP),
    "content_block_start twice for index 0: fails the attempt", "invalid_output", stream=True, ref="issue 24")
doc(F, "model-change-stream", 200, aev(MS) + aev(TB(0)) + aev(TD(0, "a")) + aev(BS(0)) + aev({**MS, "message": {**MS["message"], "model": "claude-haiku-4-5"}}) + aev(MD("end_turn", 2)) + aev(STOP),
    "a second message_start with another model: fails the attempt", "invalid_output", stream=True, ref="issue 24")
doc(F, "cache-usage", 200, {"id": "msg_c", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "usage": {"input_tokens": 5, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 2000, "output_tokens": 3}},
    "cache read and creation count as input; read is cached", okv=ok("ok", [], "stop", U(2105, 3, 2000)), ref="docs.anthropic.com/en/docs/build-with-claude/prompt-caching")

def gerr(code, status, msg="(message)", details=None):
    return {"error": {"code": code, "message": msg, "status": status, **({"details": details} if details else {})}}
REF_G = "ai.google.dev/gemini-api/docs/troubleshooting; providers.md §2 Gemini"
F = "gemini"
doc(F, "error-400-api-key-invalid", 400, gerr(400, "INVALID_ARGUMENT", "API key not valid.", [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com"}]), "bad key is a 400 here", "authentication", ref=REF_G)
doc(F, "error-400-context", 400, gerr(400, "INVALID_ARGUMENT", "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."), "context overflow", "context_length", ref=REF_G)
doc(F, "error-400-failed-precondition", 400, gerr(400, "FAILED_PRECONDITION", "Gemini API free tier is not available in your country."), "region: permanent", "permission", ref=REF_G)
doc(F, "error-403", 403, gerr(403, "PERMISSION_DENIED"), "permission", "permission", ref=REF_G)
doc(F, "error-404", 404, gerr(404, "NOT_FOUND", "models/gemini-x is not found"), "unknown model", "model_not_found", ref=REF_G)
doc(F, "error-429-per-day", 429, gerr(429, "RESOURCE_EXHAUSTED", "quota", [{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]}]), "daily quota: until the reset", "quota_exhausted", ref=REF_G)
doc(F, "error-500", 500, gerr(500, "INTERNAL"), "internal", "server_error", ref=REF_G)
doc(F, "error-503", 503, gerr(503, "UNAVAILABLE", "The model is overloaded."), "overloaded", "overloaded", ref=REF_G)
doc(F, "error-504", 504, gerr(504, "DEADLINE_EXCEEDED"), "deadline", "timeout", ref=REF_G)
GU = {"promptTokenCount": 10, "candidatesTokenCount": 0, "totalTokenCount": 266, "thoughtsTokenCount": 256}
doc(F, "prompt-blocked", 200, {"promptFeedback": {"blockReason": "SAFETY", "safetyRatings": []}, "usageMetadata": {"promptTokenCount": 10, "totalTokenCount": 10}, "modelVersion": "gemini-2.5-flash"},
    "prompt blocked: no candidates", okv=ok(None, [], "content_filter", U(10, 0), refusal=True), ref="providers.md §7")
doc(F, "safety-finish", 200, {"candidates": [{"content": {"role": "model", "parts": []}, "finishReason": "SAFETY", "index": 0}], "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 0, "totalTokenCount": 10}, "modelVersion": "gemini-2.5-flash"},
    "finishReason SAFETY", okv=ok(None, [], "content_filter", U(10, 0), refusal=True), ref="providers.md §7")
doc(F, "max-tokens-thinking-only-text", 200, {"candidates": [{"content": {"role": "model", "parts": [{"text": "Let me think", "thought": True}]}, "finishReason": "MAX_TOKENS", "index": 0}], "usageMetadata": GU, "modelVersion": "gemini-2.5-flash"},
    "MAX_TOKENS with only thinking parts on a text workflow: finishReason length, empty text", okv=ok(None, [], "length", U(10, 256, 0, 256)), ref="issue 24")
doc(F, "max-tokens-thinking-only-structured", 200, {"candidates": [{"content": {"role": "model", "parts": [{"text": "Let me think", "thought": True}]}, "finishReason": "MAX_TOKENS", "index": 0}], "usageMetadata": GU, "modelVersion": "gemini-2.5-flash"},
    "MAX_TOKENS with only thinking parts on a structured workflow: InvalidOutput", "invalid_output", workflow="structured", ref="issue 24")
doc(F, "max-tokens-no-parts-tools", 200, {"candidates": [{"content": {"role": "model"}, "finishReason": "MAX_TOKENS", "index": 0}], "usageMetadata": GU, "modelVersion": "gemini-2.5-flash"},
    "MAX_TOKENS with no parts on a tool workflow: InvalidOutput", "invalid_output", workflow="tools", tools=["lookup"], ref="issue 24")
doc(F, "mid-stream-error", 200, "data: " + json.dumps({"candidates": [{"content": {"role": "model", "parts": [{"text": "Hel"}]}, "index": 0}]}) + "\r\n\r\n" + "data: " + json.dumps(gerr(503, "UNAVAILABLE", "overloaded")) + "\r\n\r\n",
    "error object mid-stream", "overloaded", stream=True, ref=REF_G)
doc(F, "truncated-stream", 200, "data: " + json.dumps({"candidates": [{"content": {"role": "model", "parts": [{"text": "Hel"}]}, "index": 0}]}) + "\r\n\r\n", "ends before a finishReason", "stream_truncated", stream=True, ref=REF_G)
doc(F, "malformed-function-call", 200, {"candidates": [{"content": {"role": "model", "parts": []}, "finishReason": "MALFORMED_FUNCTION_CALL", "index": 0}], "usageMetadata": {"promptTokenCount": 10, "totalTokenCount": 10}},
    "MALFORMED_FUNCTION_CALL", "invalid_output", workflow="tools", tools=["lookup"], ref="providers.md §9")
doc(F, "cached-usage", 200, {"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP", "index": 0}], "usageMetadata": {"promptTokenCount": 4000, "cachedContentTokenCount": 3000, "candidatesTokenCount": 2, "totalTokenCount": 4002}},
    "implicit cache hit", okv=ok("ok", [], "stop", U(4000, 2, 3000)), ref="ai.google.dev/gemini-api/docs/caching")

REF_R = "platform.openai.com/docs/api-reference/responses-streaming"
F = "openai-responses"
def rev(o, seq=[0]):
    seq[0] += 1
    o = {"type": o.pop("type"), "sequence_number": seq[0], **o}
    return f"event: {o['type']}\ndata: {json.dumps(o)}\n\n"
def resp(status, output, usage=None, incomplete=None, error=None):
    return {"id": "resp_corpus", "object": "response", "created_at": 1750000000, "status": status, "error": error, "incomplete_details": incomplete, "instructions": None, "max_output_tokens": None,
            "model": "gpt-4.1-mini-2025-04-14", "output": output, "parallel_tool_calls": True, "previous_response_id": None, "reasoning": {"effort": None, "summary": None}, "store": True,
            "temperature": 1.0, "text": {"format": {"type": "text"}}, "tool_choice": "auto", "tools": [], "top_p": 1.0, "truncation": "disabled", "usage": usage, "user": None, "metadata": {}}
RU = {"input_tokens": 30, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 4, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 34}
MSG = lambda text, status="completed": {"id": "msg_c", "type": "message", "status": status, "role": "assistant", "content": [{"type": "output_text", "text": text, "annotations": []}]}
doc(F, "text-stream-docs", 200,
    rev({"type": "response.created", "response": resp("in_progress", [])}) + rev({"type": "response.in_progress", "response": resp("in_progress", [])}) +
    rev({"type": "response.output_item.added", "output_index": 0, "item": {**MSG(""), "status": "in_progress", "content": []}}) +
    rev({"type": "response.content_part.added", "item_id": "msg_c", "output_index": 0, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}) +
    rev({"type": "response.output_text.delta", "item_id": "msg_c", "output_index": 0, "content_index": 0, "delta": "Hello"}) +
    rev({"type": "response.output_text.delta", "item_id": "msg_c", "output_index": 0, "content_index": 0, "delta": " world"}) +
    rev({"type": "response.output_text.done", "item_id": "msg_c", "output_index": 0, "content_index": 0, "text": "Hello world"}) +
    rev({"type": "response.content_part.done", "item_id": "msg_c", "output_index": 0, "content_index": 0, "part": {"type": "output_text", "text": "Hello world", "annotations": []}}) +
    rev({"type": "response.output_item.done", "output_index": 0, "item": MSG("Hello world")}) +
    rev({"type": "response.completed", "response": resp("completed", [MSG("Hello world")], RU)}),
    "the documented text event sequence", okv=ok("Hello world", [], "stop", U(30, 4)), stream=True, ref=REF_R)
FC = {"id": "fc_c", "type": "function_call", "status": "completed", "call_id": "call_c", "name": "lookup", "arguments": "{\"q\":\"x\"}"}
doc(F, "function-call-stream-docs", 200,
    rev({"type": "response.created", "response": resp("in_progress", [])}) +
    rev({"type": "response.output_item.added", "output_index": 0, "item": {**FC, "status": "in_progress", "arguments": ""}}) +
    rev({"type": "response.function_call_arguments.delta", "item_id": "fc_c", "output_index": 0, "delta": "{\"q\":"}) +
    rev({"type": "response.function_call_arguments.delta", "item_id": "fc_c", "output_index": 0, "delta": "\"x\"}"}) +
    rev({"type": "response.function_call_arguments.done", "item_id": "fc_c", "output_index": 0, "arguments": "{\"q\":\"x\"}"}) +
    rev({"type": "response.output_item.done", "output_index": 0, "item": FC}) +
    rev({"type": "response.completed", "response": resp("completed", [FC], RU)}),
    "streamed function-call arguments", okv=ok(None, [{"name": "lookup", "arguments": {"q": "x"}}], "tool_calls", U(30, 4)), stream=True, ref=REF_R)
doc(F, "error-event-flat", 200, rev({"type": "response.created", "response": resp("in_progress", [])}) + rev({"type": "error", "code": "insufficient_quota", "message": "You exceeded your current quota", "param": None}),
    "flat error event: quota", "quota_exhausted", stream=True, ref=REF_R)
doc(F, "error-429", 429, oai("requests", "rate_limit_exceeded"), "rate limit", "rate_limited", headers={"retry-after-ms": "800"}, retry=800, ref=REF_OAI)
doc(F, "error-500", 500, oai("server_error", None), "server error", "server_error", ref=REF_OAI)
doc(F, "error-400-context", 400, oai("invalid_request_error", "context_length_exceeded", "Your input exceeds the context window of this model."), "context", "context_length", ref=REF_OAI)
