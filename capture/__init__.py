"""The capture layer: wire facts and the capture format.

Classification, paths, exchange models, the spool, body storage, the writer process and the
capture reader. The modules the proxy process imports (classify, wire, paths, ids, events, writer_proc)
stay free of pydantic and redaction; the writer child process does the redacting.
"""
