"""Error replies shaped as real OpenAI-compatible servers send them (status, body, headers).

Learned from the servers' own code and their issue trackers, not invented: llama.cpp's
`format_error_response` (`{"error": {"code", "message", "type"}}`, `exceed_context_size_error`
with `n_prompt_tokens`/`n_ctx`), llama-cpp-python's route error handler (HTTP 500,
`internal_server_error`, the exception text as `message`; 400 `context_length_exceeded` with
`param: "messages"`), vLLM's `ErrorResponse` (`{"object": "error", "message", "type":
"BadRequestError", "param", "code": 400}`), Ollama's OpenAI layer (`{"error": {"message", "type":
"api_error", "param": null, "code": null}}`).
"""

from __future__ import annotations

from tests.llm_server import Error

# llama-cpp-python (python -m llama_cpp.server) on a response_format type it cannot serve: HTTP 500.
LLAMA_CPP_PYTHON_SCHEMA_500 = Error(500, {"error": {
    "message": "response_format type must be one of \"text\" or \"json_object\", but got: json_schema",
    "type": "internal_server_error", "param": None, "code": None}})
# llama.cpp's llama-server (older builds) on the same: HTTP 500 server_error.
LLAMA_SERVER_SCHEMA_500 = Error(500, {"error": {
    "code": 500, "message": "response_format type must be one of \"text\" or \"json_object\", but got: json_schema",
    "type": "server_error"}})
# llama-server with a prompt over its -c: HTTP 400 (500 before the type existed).
LLAMA_SERVER_CONTEXT_400 = Error(400, {"error": {
    "code": 400, "message": "the request exceeds the available context size. try increasing the context size "
                            "or enable context shift", "type": "exceed_context_size_error",
    "n_prompt_tokens": 9311, "n_ctx": 8192}})
# llama-cpp-python with a prompt over n_ctx.
LLAMA_CPP_PYTHON_CONTEXT_400 = Error(400, {"error": {
    "message": "Requested tokens (9311) exceed context window of 8192", "type": "invalid_request_error",
    "param": "messages", "code": "context_length_exceeded"}})
# vLLM with a prompt over --max-model-len.
VLLM_CONTEXT_400 = Error(400, {
    "object": "error", "message": "This model's maximum context length is 8192 tokens. However, you requested "
                                  "10240 tokens (8192 in the messages, 2048 in the completion). Please reduce the "
                                  "length of the messages or completion.",
    "type": "BadRequestError", "param": None, "code": 400})
# Ollama's /v1 with a model whose template has no tools.
OLLAMA_NO_TOOLS_400 = Error(400, {"error": {"message": "qwen2.5-coder:1.5b-base does not support tools",
                                            "type": "api_error", "param": None, "code": None}})
# vLLM started without --enable-auto-tool-choice.
VLLM_TOOL_CHOICE_400 = Error(400, {
    "object": "error", "message": "\"auto\" tool choice requires --enable-auto-tool-choice and "
                                  "--tool-call-parser to be set", "type": "BadRequestError", "param": None, "code": 400})
# A busy server: 503 with Retry-After (llama-server answers 503 "Loading model" while it loads).
LLAMA_SERVER_LOADING_503 = Error(503, {"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}},
                                 (("Retry-After", "2"),))
RATE_LIMIT_429 = Error(429, {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}},
                       (("Retry-After", "3"),))
