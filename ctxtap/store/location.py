"""Where a store is: an `s3://bucket/prefix` URL and the pyarrow S3 filesystem that reaches it.

Credentials come from the AWS SDK's default chain, which pyarrow's `S3FileSystem` uses when it is
given none: `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY` (and `AWS_SESSION_TOKEN`), `AWS_PROFILE` and
the shared `~/.aws/credentials` and `~/.aws/config` files, web identity, the instance role. The
endpoint of an S3-compatible service (MinIO, SeaweedFS, Ceph, R2...) is, first found wins:
`--endpoint-url`, `AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL`, the profile's `endpoint_url` (in its
`s3 =` section or at its top level); none means AWS itself. The region: `AWS_REGION`,
`AWS_DEFAULT_REGION`, the profile's `region`, else us-east-1 for a custom endpoint.
"""

from __future__ import annotations

import configparser
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from pyarrow import fs


class StoreError(Exception):
    """A store operation that cannot go ahead; the message is one line that names the cause."""


@dataclass(frozen=True)
class StoreURL:
    bucket: str
    prefix: str  # no leading or trailing slash; may be ""

    @classmethod
    def parse(cls, url: str) -> StoreURL:
        parts = urlsplit(url)
        if parts.scheme != "s3" or not parts.netloc:
            raise StoreError(f"{url!r} is not a store URL: give s3://BUCKET/PREFIX")
        return cls(parts.netloc, parts.path.strip("/"))

    @property
    def root(self) -> str:
        """The store's root as a pyarrow path (`bucket/prefix`)."""
        return f"{self.bucket}/{self.prefix}" if self.prefix else self.bucket

    def path(self, *parts: str) -> str:
        return "/".join([self.root, *parts])

    def __str__(self) -> str:
        return f"s3://{self.root}"


def is_store_url(text: str) -> bool:
    return str(text).startswith("s3://")


def _profile_settings() -> dict[str, str]:
    """The active profile's endpoint_url and region from the shared config file, if any."""
    name = os.environ.get("AWS_PROFILE") or os.environ.get("AWS_DEFAULT_PROFILE") or "default"
    path = Path(os.environ.get("AWS_CONFIG_FILE") or Path.home() / ".aws" / "config")
    parser = configparser.RawConfigParser()
    try:
        parser.read(path)
    except (OSError, configparser.Error):
        return {}
    section = name if name == "default" else f"profile {name}"
    if not parser.has_section(section):
        return {}
    out: dict[str, str] = {}
    for key in ("endpoint_url", "region"):
        if parser.has_option(section, key):
            out[key] = parser.get(section, key).strip()
    if parser.has_option(section, "s3"):  # nested: "s3 =\n  endpoint_url = ..."
        for line in parser.get(section, "s3").splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "endpoint_url" and value.strip():
                out["endpoint_url"] = value.strip()
    return out


def endpoint_of(endpoint_url: str | None = None) -> str | None:
    return (endpoint_url or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
            or _profile_settings().get("endpoint_url") or None)


def s3_filesystem(endpoint_url: str | None = None) -> fs.S3FileSystem:
    """A pyarrow S3 filesystem with the AWS default credential chain and the endpoint found as above."""
    endpoint = endpoint_of(endpoint_url)
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or \
        _profile_settings().get("region")
    kwargs: dict = {"connect_timeout": 10, "request_timeout": 60,
                    "retry_strategy": fs.AwsStandardS3RetryStrategy(max_attempts=4)}
    if endpoint:
        parts = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
        kwargs["endpoint_override"] = parts.netloc
        kwargs["scheme"] = parts.scheme or "https"
        kwargs["region"] = region or "us-east-1"
    elif region:
        kwargs["region"] = region
    try:
        return fs.S3FileSystem(**kwargs)
    except (OSError, ValueError) as exc:
        raise StoreError(f"cannot set up S3 access ({exc})") from exc
