"""A live S3 server (moto's) on 127.0.0.1 for the remote tests, with one bucket."""

from __future__ import annotations

import contextlib
import socket

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def moto_s3(bucket: str):
    """``(endpoint, boto3 client)`` of a fresh moto server holding an empty ``bucket``."""
    import boto3
    from moto import server as moto_server

    port = _free_port()
    srv = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    srv.start()
    endpoint = f"http://127.0.0.1:{port}"
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                          aws_access_key_id="testing", aws_secret_access_key="testing")
    client.create_bucket(Bucket=bucket)
    try:
        yield endpoint, client
    finally:
        srv.stop()


def storage_options(endpoint: str) -> dict:
    """fsspec's ``storage_options`` for the moto server at ``endpoint``."""
    return {"key": "testing", "secret": "testing",
            "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"}}


@pytest.fixture(scope="module")
def server():
    """A module's moto server with the bucket ``bkt``: ``(endpoint, boto3 client)``."""
    with moto_s3("bkt") as s:
        yield s


@pytest.fixture
def so(server, tmp_path, monkeypatch):
    """The server's ``storage_options``, the test in ``tmp_path`` (a URL taken as a local
    directory would land there) with a cache of its own."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GENOTOK_CACHE", str(tmp_path / "cache"))
    return storage_options(server[0])
