"""The incremental scanner parses exactly what json.loads parses, reusing the shared prefix."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxtap.analysis.parsing.incremental_json import ScanError, scan

TRACKED = ("messages", "input")


def body(n: int, extra: str = "", tail_key: str = "tools") -> bytes:
    msgs = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} é ✓ {extra}"}
            for i in range(n)]
    return json.dumps({"model": "m", "messages": msgs, tail_key: [{"name": "Bash"}], "stream": True},
                      ensure_ascii=False).encode()


def test_full_scan_matches_json_loads_and_spans_point_at_values():
    data = body(5)
    out = scan(data, TRACKED)
    assert out.obj == json.loads(data)
    for key, (s, e) in out.spans.items():
        assert json.loads(data[s:e]) == out.obj[key]
    for (s, e), element in zip(out.elements["messages"], out.obj["messages"], strict=True):
        assert json.loads(data[s:e]) == element


def test_growing_history_reuses_prefix_objects_and_scans_only_the_tail():
    first = scan(body(30), TRACKED)
    data = body(31)
    second = scan(data, TRACKED, prev=first)
    assert second.obj == json.loads(data)
    assert second.reused_elements["messages"] == 30
    assert all(a is b for a, b in zip(first.obj["messages"], second.obj["messages"][:30], strict=False))
    assert second.scanned_bytes < len(data) / 5
    for (s, e), element in zip(second.elements["messages"], second.obj["messages"], strict=True):
        assert json.loads(data[s:e]) == element
    third = scan(body(32), TRACKED, prev=second)
    assert third.reused_elements["messages"] == 31


def test_change_early_in_the_body_forces_a_rescan():
    first = scan(body(10), TRACKED)
    data = body(10).replace(b'"model": "m"', b'"model": "x"')
    second = scan(data, TRACKED, prev=first)
    assert second.obj == json.loads(data)
    assert second.reused_elements.get("messages", 0) == 0


def test_identical_body_is_fully_reused():
    first = scan(body(10), TRACKED)
    second = scan(body(10), TRACKED, prev=first)
    assert second.obj == first.obj
    assert second.reused_elements["messages"] == 10


@pytest.mark.parametrize("bad", [b"", b"[]", b"{", b'{"a": 1,}', b'{"a" 1}', b'{"a": 1} x', b"\xff\xfe"])
def test_malformed_bodies_raise_scan_error(bad):
    with pytest.raises((ScanError, UnicodeDecodeError)):
        scan(bad, TRACKED)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(json_values, max_size=6),
    st.lists(json_values, max_size=3),
    st.dictionaries(st.sampled_from(["a", "model", "zz"]), json_values, max_size=3),
    st.booleans(),
)
def test_reuse_never_changes_the_result(prefix, suffix, others, ascii_only):
    before = {"model": "m", "messages": prefix, **others}
    after = {"model": "m", "messages": prefix + suffix, **others}
    a = json.dumps(before, ensure_ascii=ascii_only).encode()
    b = json.dumps(after, ensure_ascii=ascii_only).encode()
    first = scan(a, TRACKED)
    second = scan(b, TRACKED, prev=first)
    assert second.obj == json.loads(b)
    for (s, e), element in zip(second.elements["messages"], second.obj["messages"], strict=True):
        assert json.loads(b[s:e]) == element


def test_values_after_the_growing_history_are_found_again():
    """Claude Code sends its tools after the messages: byte-identical values keep their objects."""
    first = scan(body(30), TRACKED)
    data = body(31)
    second = scan(data, TRACKED, prev=first)
    assert second.obj == json.loads(data)
    assert second.obj["tools"] is first.obj["tools"]
    for key, (s, e) in second.spans.items():
        assert json.loads(data[s:e]) == second.obj[key]
    third = scan(body(32, tail_key="tools"), TRACKED, prev=second)
    assert third.obj["tools"] is first.obj["tools"]


@pytest.mark.parametrize(("before", "after"), [
    (b'{"messages": [1], "n": 12, "t": "\xc3\xa9"}', b'{"messages": [1, 2], "n": 123, "t": "\xc3\xa9"}'),
    (b'{"messages": [1], "n": "ab", "t": 1}', b'{"messages": [1, 2], "n": "ab" , "t": 1}'),
    (b'{"messages": [1], "n": [1], "t": true}', b'{"messages": [1, 2], "n": [1] }'),
])
def test_a_value_found_again_must_end_where_it_ended(before, after):
    first = scan(before, TRACKED)
    second = scan(after, TRACKED, prev=first)
    assert json.dumps(second.obj) == json.dumps(json.loads(after))  # 1 is not true
    for key, (s, e) in second.spans.items():
        assert json.loads(after[s:e]) == second.obj[key]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(json_values, max_size=6),
    st.lists(json_values, min_size=1, max_size=3),
    st.dictionaries(st.sampled_from(["a", "tools", "zz"]), json_values, max_size=3),
    st.dictionaries(st.sampled_from(["a", "tools", "zz"]), json_values, max_size=3),
    st.booleans(),
)
def test_values_after_the_history_never_change_the_result(prefix, suffix, tail, other_tail, ascii_only):
    """Values after the tracked array: found again when unchanged, parsed when not."""
    before = {"model": "m", "messages": prefix, **tail}
    after = {"model": "m", "messages": prefix + suffix, **tail, **other_tail}
    a = json.dumps(before, ensure_ascii=ascii_only).encode()
    b = json.dumps(after, ensure_ascii=ascii_only).encode()
    second = scan(b, TRACKED, prev=scan(a, TRACKED))
    assert json.dumps(second.obj) == json.dumps(json.loads(b))  # 1 is not true
    for key, (s, e) in second.spans.items():
        assert json.loads(b[s:e]) == second.obj[key]


@settings(max_examples=100, deadline=None)
@given(st.lists(json_values, max_size=6), st.lists(json_values, max_size=3), st.floats(0, 1), st.booleans())
def test_a_given_shared_prefix_up_to_the_true_one_parses_the_same(prefix, suffix, part, ascii_only):
    """The capture's recorded prefix replaces the comparison; any length up to the true common
    prefix (a shorter one only parses more) gives the very result of a comparison."""
    a = json.dumps({"model": "m", "messages": prefix, "z": 1}, ensure_ascii=ascii_only).encode()
    b = json.dumps({"model": "m", "messages": prefix + suffix, "z": 1}, ensure_ascii=ascii_only).encode()
    true = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    first = scan(a, TRACKED)
    compared = scan(b, TRACKED, prev=first)
    given_prefix = scan(b, TRACKED, prev=first, shared=int(true * part))
    assert given_prefix.obj == compared.obj == json.loads(b)
    assert given_prefix.elements == compared.elements
    assert scan(b, TRACKED, prev=first, shared=true).scanned_bytes == compared.scanned_bytes
