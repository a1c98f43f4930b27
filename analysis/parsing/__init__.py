"""Reading the wire: recorded exchanges into normalised model calls (the protocol parsers' shared parts)."""
