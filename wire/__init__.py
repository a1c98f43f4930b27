"""The wire's own facts, below every other layer: what each API family's streams and errors look
like and what each provider is called and expects, for the redactor, the capture, replay and export
alike. Standard library only (the proxy process imports it)."""
