"""Wire-protocol parsers: one module per API family, all pure functions."""
