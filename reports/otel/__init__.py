"""OpenTelemetry GenAI export of an analysed capture (`ctxtap export CAPTURE --otlp URL | --otlp-json FILE`).

`spans.py` turns the analysis views into spans (invoke_agent per turn, chat per model call,
execute_tool per tool call); `otlp.py` encodes them with `opentelemetry-proto` and sends them
over OTLP/HTTP or writes OTLP/JSON. Like the HTML report, this reads views only.
"""
