"""Opening a store URL with fsspec, and the few file operations the store needs."""

from __future__ import annotations

import os
import uuid
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem


def open_url(url: str, endpoint_url: str | None = None,
             **storage_options: Any) -> tuple[AbstractFileSystem, str]:
    """The filesystem and root path for ``url``.

    A plain path or ``file://`` URL is a local directory (created if missing). ``s3://bucket/prefix``
    goes through s3fs with the usual AWS variables; ``endpoint_url`` (or ``AWS_ENDPOINT_URL``) points
    it at an S3-compatible server. Any other fsspec URL is passed through with ``storage_options``.
    """
    protocol = url.split("://", 1)[0] if "://" in url else "file"
    options = dict(storage_options)
    if protocol == "file":
        options.setdefault("auto_mkdir", True)
    elif protocol in ("s3", "s3a"):
        endpoint = endpoint_url or os.environ.get("AWS_ENDPOINT_URL")
        if endpoint:
            options.setdefault("endpoint_url", endpoint)
    import fsspec.core  # on first use: a member without a snapshot store never needs it

    fs, root = fsspec.core.url_to_fs(url, **options)
    root = root.rstrip("/")
    if is_local(fs):
        fs.makedirs(root, exist_ok=True)
    return fs, root


def is_local(fs: AbstractFileSystem) -> bool:
    """Whether ``fs`` is the local filesystem (where a rename is atomic)."""
    protocols = fs.protocol if isinstance(fs.protocol, (tuple, list)) else (fs.protocol,)
    return "file" in protocols or "local" in protocols


def write_atomic(fs: AbstractFileSystem, path: str, data: bytes) -> None:
    """Write ``path`` so a reader sees either the old content or the new, never a part.

    Locally: a temporary file beside it, then a rename. On an object store a single PUT is
    already atomic, so the object is written directly.
    """
    if is_local(fs):
        tmp = f"{path}.tmp-{uuid.uuid4().hex}"
        fs.pipe_file(tmp, data)
        os.replace(tmp, path)
    else:
        fs.pipe_file(path, data)


def remove_tree(fs: AbstractFileSystem, path: str) -> None:
    """Remove everything under ``path``; nothing there is fine."""
    try:
        if fs.exists(path):
            fs.rm(path, recursive=True)
    except FileNotFoundError:
        pass
    fs.invalidate_cache(path)


def list_names(fs: AbstractFileSystem, path: str) -> list[str]:
    """The names (not paths) directly under ``path``; empty if there is nothing."""
    fs.invalidate_cache(path)
    try:
        entries = fs.ls(path, detail=False)
    except FileNotFoundError:
        return []
    return sorted(e.rstrip("/").rsplit("/", 1)[-1] for e in entries if e.rstrip("/") != path)
