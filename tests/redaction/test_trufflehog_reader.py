"""The reader of trufflehog's pattern tests (`tests.secret_examples.trufflehog`), on a checkout made here: Go
literals read as Go means them, a case it cannot read counted rather than guessed, a secret's parts found."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.secret_examples.trufflehog import held_out, pattern_cases, secret_parts, trufflehog_examples

_TEST_GO = '''package acme

import "fmt"

var (
\tvalidPattern = "acme_" + "q8Vz3kLp0wXr7NbT2yHs5GdC"
\tkeyword      = `acme`
)

func TestAcme_Pattern(t *testing.T) {
\tsecret := "Zt8Qm2Vx9Lp4Rk7W"
\ttests := []struct {
\t\tname  string
\t\tinput string
\t\twant  []string
\t}{
\t\t{
\t\t\tname:  "valid pattern",
\t\t\tinput: fmt.Sprintf("%s token = '%s'", keyword, validPattern),
\t\t\twant:  []string{validPattern},
\t\t},
\t\t{
\t\t\tname:  "a pair",
\t\t\tinput: `acme id=app01 secret=` + secret, // a raw string and a local variable
\t\t\twant:  []string{"app01:" + secret},
\t\t},
\t\t{
\t\t\tname:  "a URL",
\t\t\tinput: "ACME_DSN=acme://bot:Xk9mP2qR7vL4zz@db.acme.example:5432/app",
\t\t\twant:  []string{"acme://bot:Xk9mP2qR7vL4zz@db.acme.example:5432/app"},
\t\t},
\t\t{
\t\t\tname:  "invalid pattern",
\t\t\tinput: "acme_short",
\t\t\twant:  nil,
\t\t},
\t\t{
\t\t\tname:  "unreadable",
\t\t\tinput: makeInput(3),
\t\t\twant:  []string{"x"},
\t\t},
\t}
}
'''


def test_go_literals_are_read_as_go_means_them():
    cases, unread = pattern_cases(_TEST_GO)
    assert cases == [
        ("acme token = 'acme_q8Vz3kLp0wXr7NbT2yHs5GdC'", ["acme_q8Vz3kLp0wXr7NbT2yHs5GdC"]),
        ("acme id=app01 secret=Zt8Qm2Vx9Lp4Rk7W", ["app01:Zt8Qm2Vx9Lp4Rk7W"]),
        ("ACME_DSN=acme://bot:Xk9mP2qR7vL4zz@db.acme.example:5432/app",
         ["acme://bot:Xk9mP2qR7vL4zz@db.acme.example:5432/app"]),
        ("acme_short", []),
    ]
    assert unread == 1  # `makeInput(3)`: counted, not guessed


@pytest.mark.parametrize("want, text, parts", [
    ("app01:Zt8Qm2Vx9Lp4Rk7W", "id=app01 secret=Zt8Qm2Vx9Lp4Rk7W", ["Zt8Qm2Vx9Lp4Rk7W"]),  # the id is too short to count
    ("acme://bot:Xk9mP2qR7vL4zz@db/app", "url=acme://bot:Xk9mP2qR7vL4zz@db/app", ["Xk9mP2qR7vL4zz"]),
    ("https://chat.example.com/hooks/T01/Qm2Vx9Lp4Rk7WzT8", "hook https://chat.example.com/hooks/T01/Qm2Vx9Lp4Rk7WzT8",
     ["Qm2Vx9Lp4Rk7WzT8"]),
    ("jdbc:postgresql://db:5432/app", "jdbc:postgresql://db:5432/app", []),  # no secret in it
    ("api.acme-cloud.com", "host api.acme-cloud.com", []),  # a host
])
def test_only_the_secret_of_a_finding_counts(want, text, parts):
    assert secret_parts(want, text) == parts


def test_a_checkout_gives_classed_examples(tmp_path: Path):
    detector = tmp_path / "pkg" / "detectors" / "acme"
    detector.mkdir(parents=True)
    (detector / "acme.go").write_text('var keyPat = regexp.MustCompile(`\\b(acme_[A-Za-z0-9]{24})\\b`)\n'
                                      'var secretPat = regexp.MustCompile(`secret=([A-Za-z0-9]{16})`)\n')
    (detector / "acme_test.go").write_text(_TEST_GO)
    loaded = trufflehog_examples(tmp_path)
    assert (loaded.files, loaded.unread) == (1, 1)
    by_secret = {ex.secret: ex.cls for ex in loaded.examples}
    assert by_secret == {"acme_q8Vz3kLp0wXr7NbT2yHs5GdC": "self-identifying",  # its head is in the regex
                         "Zt8Qm2Vx9Lp4Rk7W": "name-marked", "Xk9mP2qR7vL4zz": "name-marked"}
    assert all(ex.source == "trufflehog" and ex.family == "acme" for ex in loaded.examples)
    assert {held_out(f"d{i}") for i in range(8)} == {False, True}  # both halves drawn


def test_a_directory_that_is_no_checkout_is_refused(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="not a trufflehog checkout"):
        trufflehog_examples(tmp_path)
