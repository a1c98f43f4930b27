"""Values handed to a secret store (`redaction/secret_stores.py`, and `cli_flags` for what is piped): a Kubernetes
Secret's values whatever their keys, in YAML and JSON; the values of `kubectl create secret`, `aws secretsmanager`
and any CLI's `secret(s) set`; a literal piped or fed into a secret setter. Raw, after a tool's line numbers and
inside a JSON tool result, on both engines."""

from __future__ import annotations

import base64
import json
import random

import pytest

from ctxtap.redaction import Redactor
from ctxtap.redaction.engine import hyperscan_available
from tests.redaction_checks import assert_kept_everywhere, assert_redacted_everywhere

BACKENDS = ["python"] + (["hyperscan"] if hyperscan_available() else [])
_RNG = random.Random(20261207)
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def _token(n: int = 24) -> str:
    return "".join(_RNG.choice(_ALNUM) for _ in range(n))


def _numbered(text: str) -> str:
    """As Claude Code's Read shows a file: each line after its number and an arrow."""
    return "".join(f"{i:6d}\u2192{line}\n" for i, line in enumerate(text.splitlines(), 1))


KEY = _token()
B64 = base64.b64encode(_token(30).encode()).decode()
MANIFEST = f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: payments\ntype: Opaque\nstringData:\n  STRIPE: {KEY}\n"
KUBECTL_YAML = f"apiVersion: v1\ndata:\n  config.json: {B64}\nkind: Secret\nmetadata:\n  name: app\ntype: Opaque\n"
BLOCK = f'kind: Secret\nstringData:\n  service.json: |\n    {{"client": "app", "key": "{KEY}"}}\n  mode: "live"\n'
KUBECTL_JSON = json.dumps({"apiVersion": "v1", "items": [
    {"apiVersion": "v1", "data": {"region": "ZXUtd2VzdC0x"}, "kind": "ConfigMap", "metadata": {"name": "cfg"}},
    {"apiVersion": "v1", "data": {"token": B64}, "kind": "Secret", "metadata": {"name": "app"}, "type": "Opaque"},
], "kind": "List"}, indent=2)

FOUND = [
    (MANIFEST, KEY),
    (_numbered(MANIFEST), KEY),
    (KUBECTL_YAML, B64),  # `kubectl get secret -o yaml`: data before kind
    (BLOCK, KEY),  # a block scalar's lines
    (KUBECTL_JSON, B64),  # `kubectl get secrets -o json`: a list
    ("apiVersion: v1\nkind: ConfigMap\ndata:\n  mode: x\n---\n" + MANIFEST, KEY),  # the next document
    (f"kubectl create secret generic payments --from-literal=STRIPE={KEY} --from-literal=region=eu-west-1", KEY),
    (f"kubectl -n prod create secret generic api --from-literal 'TOKEN={KEY}'", KEY),
    (f"gh secret set DEPLOY_KEY --body {KEY}", KEY),
    (f'gh secret set DEPLOY_KEY -b "{KEY}" --repo acme/api', KEY),
    (f"aws secretsmanager create-secret --name prod/stripe --secret-string {KEY}", KEY),
    (f"""aws secretsmanager put-secret-value --secret-id db --secret-string '{{"user":"app","key":"{KEY}"}}'""", KEY),
    (f"az keyvault secret set --vault-name kv --name stripe --value {KEY}", KEY),
    (f"aws ssm put-parameter --name /prod/stripe --type SecureString --value '{KEY}' --overwrite", KEY),
    (f"supabase secrets set STRIPE={KEY} REGION=eu-west-1", KEY),  # any CLI's `secrets set NAME=VALUE`
    # a literal piped or fed into any CLI's secret setter, which reads it from its standard input
    (f"echo -n '{KEY}' | npx wrangler secret put STRIPE", KEY),
    (f"printf '%s' {KEY} | gcloud secrets create stripe --data-file=-", KEY),
    (f"echo {KEY} | docker secret create stripe -", KEY),
    (f"firebase functions:secrets:set STRIPE <<< {KEY}", KEY),
]

LEFT = [
    "apiVersion: v1\nkind: ConfigMap\ndata:\n  region: eu-west-1\n  mode: Xk9mP2qR7vL4zzQ8abc\n",
    "kind: Secret\nstringData:\n  password: {{ .Values.db.password | quote }}\n  user: ${DB_USER}\n",
    "kubectl create secret generic tls --from-file=tls.crt=cert.pem --from-file=tls.key=key.pem",
    "kubectl create configmap settings --from-literal=mode=Xk9mP2qR7vL4zzQ8abc",
    "gh secret set DEPLOY_KEY < deploy_key.txt\ngh secret list --repo acme/api",
    "gh secret set DEPLOY_KEY --body \"$DEPLOY_KEY\"",
    "aws ssm put-parameter --name /prod/mode --type String --value Xk9mP2qR7vL4zzQ8abc",  # a plain parameter
    "echo $STRIPE_KEY | npx wrangler secret put STRIPE\nThe secret set is small: a=b, c=d.",
    "A Kubernetes Secret (kind: Secret) keeps its values under data: or stringData: as base64.",
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("text, secret", FOUND)
def test_a_value_handed_to_a_secret_store_is_redacted(backend, text, secret):
    assert_redacted_everywhere(Redactor(b"k" * 32, "stores", backend=backend), text, secret)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("text", LEFT)
def test_what_no_store_holds_is_kept(backend, text):
    assert_kept_everywhere(Redactor(b"k" * 32, "stores", backend=backend), text)


@pytest.mark.parametrize("backend", BACKENDS)
def test_only_the_secret_objects_values_go(backend):
    out = Redactor(b"k" * 32, "stores", backend=backend).redact_text(KUBECTL_JSON)
    items = json.loads(out)["items"]
    assert items[0]["data"] == {"region": "ZXUtd2VzdC0x"}  # the ConfigMap's
    assert items[1]["data"]["token"].startswith("[REDACTED:") and items[1]["metadata"] == {"name": "app"}
