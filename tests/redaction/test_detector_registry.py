"""Every registered detector finds a secret in each of its examples and leaves each of its near misses,
run alone (issue 37, item 3: gitleaks' `tps`/`fps`, detect-secrets' plugin habit).

A detector runs alone as `benchmarks/bench_token_detector.py` runs the vendor-token detector:
its own triggers in an engine of their own, its hits handed to it as the scanner hands them
(one list per trigger). A decoder hands what it decodes to the whole scanner, as in a scan.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import pytest

from ctxtap.redaction import kingfisher, registry
from ctxtap.redaction.detector import Detector, sample
from ctxtap.redaction.engine import build_engine, hyperscan_available
from ctxtap.redaction.gitleaks import load_rules
from ctxtap.redaction.scanner import get_scanner
from ctxtap.redaction.spans import Span, merge_spans

BACKENDS = ["python"] + (["hyperscan"] if hyperscan_available() else [])

# The order the scanner runs them in (`redaction.registry` says why it matters).
DECLARED = (
    "token-formats",
    "context-formats",
    "password-hashes",
    "json-web-keys",
    "seed-phrases",
    "rule-catalogue",
    "assignments",
    "command-lines",
    "comparisons",
    "config-fields",
    "host-tokens", "secret-stores",
    "directives",
    "prose",
    "columns",
    "vendor-tokens",
    "token-shapes",
    "key-lines",
    "url-tokens",
    "percent-encoded",
    "html-entities",
    "base64-files",
)

DETECTORS = registry.detectors_for(kingfisher.add_rules(load_rules()))
EXAMPLES = [pytest.param(d.name, i, id=f"{d.name}-{i}") for d in DETECTORS for i in range(len(d.examples))]
NEAR_MISSES = [pytest.param(d.name, i, id=f"{d.name}-{i}") for d in DETECTORS for i in range(len(d.near_misses))]


@cache
def _alone(name: str, backend: str) -> tuple[Detector, Callable[[bytes], list[Span]]]:
    """The detector called `name` and its spans in a text, found by its own triggers alone."""
    detector = next(d for d in get_scanner(backend).detectors if d.name == name)
    triggers = list(detector.triggers)
    starts = frozenset(range(len(triggers))) if detector.python_starts else frozenset()
    engine = build_engine(triggers, backend, python_starts=starts)
    scanner = get_scanner(backend)

    def spans(data: bytes) -> list[Span]:
        by_trigger = engine.scan(data).by_trigger
        if not by_trigger:
            return []
        hits = [by_trigger.get(i, ()) for i in range(len(triggers))]
        found: list[Span] = []
        if detector.find is not None:
            detector.find(data, hits, found)
        elif detector.nests:
            detector.decode(data, hits, found, lambda decoded: scanner.find_spans(decoded, depth=1))
        else:
            detector.decode(data, hits, found, lambda decoded: scanner.find_spans(decoded, decode=False))
        return merge_spans(found, [])

    return detector, spans


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("name", "index"), EXAMPLES)
def test_a_detector_alone_finds_a_secret_in_each_example(backend: str, name: str, index: int) -> None:
    detector, spans = _alone(name, backend)
    example = detector.examples[index].encode()
    found = spans(example)
    assert found, (name, example)
    assert get_scanner(backend).find_spans(example), "the whole scanner finds it too"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("name", "index"), NEAR_MISSES)
def test_a_detector_alone_leaves_each_near_miss(backend: str, name: str, index: int) -> None:
    detector, spans = _alone(name, backend)
    near_miss = detector.near_misses[index].encode()
    assert spans(near_miss) == [], (name, near_miss)


def test_every_detector_has_an_example_and_a_near_miss() -> None:
    for detector in DETECTORS:
        assert detector.examples and detector.near_misses, detector.name
        assert all(isinstance(text, str) and text for text in detector.examples + detector.near_misses)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_scanner_runs_the_registry_in_its_declared_order(backend: str) -> None:
    scanner = get_scanner(backend)
    assert tuple(d.name for d in scanner.detectors) == DECLARED
    assert tuple(d.name for d in DETECTORS) == DECLARED
    # The engine numbers the triggers in the same order, the rule catalogue's after every other's.
    numbered = [scanner.detectors[scanner._owner[r.start]].name for r in scanner._ranges]
    assert numbered == [n for n in DECLARED if n != "rule-catalogue"] + ["rule-catalogue"]
    assert scanner._ranges[-1].stop == scanner._first_opener
    # Every trigger is its detector's, handed over at its place in the detector's own list.
    for detector, r in zip((scanner.detectors[scanner._owner[r.start]] for r in scanner._ranges), scanner._ranges,
                           strict=True):
        assert len(r) == len(detector.triggers)


def test_the_name_rules_come_after_the_detectors_whose_findings_stop_their_values() -> None:
    """`assignments` reads the spans found before it (priority up to gitleaks'): the token and context
    formats and the rule catalogue run first, so an env value stops where a token begins."""
    names = [d.name for d in DETECTORS]
    assert [d.name for d in DETECTORS if d.reads_found] == ["assignments"]
    before = ("token-formats", "context-formats", "rule-catalogue")
    assert names.index("assignments") > max(names.index(n) for n in before)
    token = sample("ghp_<alnum:36>").encode()
    body = b"DB_PASSWORD=Xk9mP2qR7v," + token + b"\n"
    spans = get_scanner().find_spans(body)
    assert [(body[s.start : s.end], s.kind) for s in spans] == [(b"Xk9mP2qR7v,", "password"), (token, "github-token")]


def test_the_registry_refuses_a_decoder_before_a_finder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "REGISTRY", (registry.REGISTRY[-1], *registry.REGISTRY[:-1]))
    with pytest.raises(ValueError, match="decoders come after"):
        registry.detectors_for(kingfisher.add_rules(load_rules()))
