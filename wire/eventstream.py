"""AWS event streams (`application/vnd.amazon.eventstream`): the binary framing, read and written.

Each message is a prelude (total and header lengths, a CRC-32 of them), typed headers, a payload
and a CRC-32 of the whole message. Bedrock's streamed answers come this way: the protocol parsers
read the messages (`read_messages`), the redactor rewrites frames (`redaction/eventstream.py`) and
the scripted model server writes them (`encode`). Standard library only.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

PRELUDE = struct.Struct(">III")
MAX_FRAME_BYTES = 16 * 1024 * 1024  # the format allows 16 MiB per message
STRING = 7  # header value types: 7 is a UTF-8 string (uint16 length), 6 a byte array
FIXED = {0: 0, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 8: 8, 9: 16}


def valid_prelude(data: bytes | bytearray, pos: int = 0) -> tuple[int, int] | None:
    """(total, header length) of the frame at `pos`, if its prelude's checksum holds."""
    total, headers, crc = PRELUDE.unpack_from(data, pos)
    if zlib.crc32(data[pos : pos + 8]) != crc or not 16 + headers <= total <= MAX_FRAME_BYTES:
        return None
    return total, headers


def looks_like_eventstream(data: bytes) -> bool:
    """Starts with an event-stream prelude whose checksum holds (one chance in 2^32 by accident)."""
    return len(data) >= 12 and valid_prelude(data) is not None


def header_fields(headers: bytes) -> list[tuple[bytes, int, bytes]] | None:
    """(name, value type, value bytes) of each header, or None where the format does not describe them."""
    out = []
    pos = 0
    try:
        while pos < len(headers):
            name_size = headers[pos]
            name = headers[pos + 1 : pos + 1 + name_size]
            kind = headers[pos + 1 + name_size]
            pos += 2 + name_size
            if kind in (6, STRING):
                size = int.from_bytes(headers[pos : pos + 2], "big")
                pos += 2
            else:
                size = FIXED[kind]
            if pos + size > len(headers):
                return None
            out.append((name, kind, headers[pos : pos + size]))
            pos += size
    except (IndexError, KeyError):
        return None
    return out


@dataclass(frozen=True)
class Message:
    """One event-stream message as a reader needs it: string headers by name, and the payload."""

    headers: dict[str, str]
    payload: bytes


def read_messages(data: bytes) -> tuple[list[Message], bool]:
    """The messages of an event-stream body in order, and whether all of it was read (False: it
    ended mid-message, or a checksum did not hold there; the messages before are returned)."""
    out: list[Message] = []
    pos = 0
    while len(data) - pos >= 12:
        sizes = valid_prelude(data, pos)
        if sizes is None or len(data) - pos < sizes[0]:
            return out, False
        total, header_size = sizes
        message = data[pos : pos + total]
        if zlib.crc32(message[:-4]) != int.from_bytes(message[-4:], "big"):
            return out, False
        fields = header_fields(message[12 : 12 + header_size]) or []
        headers = {n.decode("utf-8", "replace"): v.decode("utf-8", "replace") for n, k, v in fields if k == STRING}
        out.append(Message(headers, message[12 + header_size : -4]))
        pos += total
    return out, pos == len(data)


def encode(headers: bytes, payload: bytes) -> bytes:
    """One message: prelude, headers, payload, with both checksums."""
    total = 16 + len(headers) + len(payload)
    prelude = struct.pack(">II", total, len(headers))
    prelude += zlib.crc32(prelude).to_bytes(4, "big")
    message = prelude + headers + payload
    return message + zlib.crc32(message).to_bytes(4, "big")
