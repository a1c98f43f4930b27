"""The prompt cache and its cost: the bytes, the provider's verdict, the client's claim, prices."""
