"""Wire protocols: one module per API family, found through `registry`.

Each family module (`anthropic`, `openai_responses`, `chat_completions`,
`gemini`) defines a `Protocol` subclass and a `PROTOCOL` instance; `registry`
discovers them on first use. `common` holds what the parsers share (the request
draft, tolerant accessors, content-part readers, per-item reuse), `editing` the
request serialiser every protocol's `serialise` uses, `responses_chain` the
Responses `previous_response_id` memory. The parsers are pure functions.
"""
