"""What the analyzer knows about each client, one module per client.

Every module here declares a `CLIENT` (see `registry.Client`): its attribution
rules (where a block came from), purpose rules (why a request was sent) and
identity steps (which session, thread and turn it belongs to). `generic.py`
holds the client-independent rules. The engines in `analysis.attribution`,
`analysis.purpose` and `analysis.identity` loop over the registered clients, so
adding a client is one module here plus its tests.
"""
