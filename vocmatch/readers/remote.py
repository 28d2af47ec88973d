"""Annotation files where they live: a local folder or an fsspec URL (``s3://bucket/gt``,
``gs://...``, ``file:///data/gt``).

A URL is listed and read through `fsspec <https://filesystem-spec.readthedocs.io>`_ (the
``remote`` extra: ``pip install '.[remote]'`` in a clone), imported only when a URL is given.
Listing gives the same keys as :func:`vocmatch.readers.parse.list_directory` gives for a
folder (the path below the root without ``.xml``, in any case; one file per key, also when
case is ignored); reading checks each file's size against the same limit before reading it
and then reads at most one byte more, and the bytes go to the same fast reader and parser
as local files (:func:`vocmatch.readers.scan.read_listed_columns`).

Credentials and endpoints come from fsspec's usual places (``AWS_*`` variables, ``~/.aws``,
``FSSPEC_S3_ENDPOINT_URL``...) or from ``storage_options``, passed to the file system.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from vocmatch.errors import AnnotationError, InputError, no_annotation_files
from vocmatch.limits import DEFAULT_MAX_BYTES

if TYPE_CHECKING:
    # Imported where used: is_url, which the command line asks of every input path, loads
    # neither the readers nor numpy.
    from vocmatch.readers.parse import DirectoryListing
    from vocmatch.readers.scan import ColumnSet

__all__ = [
    "StorageOptions",
    "file_sizes",
    "is_url",
    "list_location",
    "local_file_url",
    "location_reader",
    "read_location_columns",
    "read_location_pair",
]

#: Keyword arguments of an fsspec file system (``{"anon": True}``, an endpoint...).
StorageOptions = Mapping[str, Any]

# A scheme of two characters or more, so that a Windows drive (``C:/``) stays a path.
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+://")


def is_url(location: str | os.PathLike[str]) -> bool:
    """Whether ``location`` is a URL (``scheme://...``) rather than a local path.

    >>> is_url("s3://bucket/gt"), is_url("data/gt"), is_url("C:/data")
    (True, False, False)
    """
    return isinstance(location, str) and _URL.match(location) is not None


def list_location(
    location: str | os.PathLike[str],
    storage_options: StorageOptions | None = None,
    suffix: str = ".xml",
) -> DirectoryListing:
    """List the annotation files below a folder or a URL, one per image key.

    Args:
        location: A local folder or an fsspec URL.
        storage_options: Options of the URL's file system.
        suffix: The lower-case suffix of the files listed.

    Returns:
        The files to read (paths as URLs for a URL), the skipped ones, the notes.

    Raises:
        InputError: The location cannot be listed, or fsspec (or the file system the URL
            needs) is not installed.
    """
    from vocmatch.core.model import SkippedFile
    from vocmatch.readers.parse import DirectoryListing, list_directory

    if not is_url(location):
        return list_directory(location, suffix)
    url = os.fspath(location)
    fs, root = _file_system(url, storage_options)
    try:
        found = fs.find(root, detail=True)
    except (OSError, ValueError) as error:
        raise InputError(f"{url}: cannot list: {_reason(error)}") from None
    if not found and local_file_url(url).startswith("file://") and not fs.isdir(root):
        raise InputError(f"{url}: no such folder")
    prefix = root.rstrip("/") + "/"
    entries: list[tuple[str, str]] = []
    for path, info in found.items():
        if info.get("type") != "file" or not path.startswith(prefix):
            continue
        relative = path[len(prefix) :]
        if relative.lower().endswith(suffix):
            entries.append((relative[: -len(suffix)], fs.unstrip_protocol(path)))
    entries.sort()
    # list_directory's rule: the first file of a key (also ignoring case) is the image's.
    files: list[tuple[str, str]] = []
    skipped: list[SkippedFile] = []
    seen: dict[str, str] = {}
    folded: dict[str, tuple[str, str]] = {}
    for key, path in entries:
        if key in seen:
            skipped.append(SkippedFile(path, f"same image key {key!r} as {seen[key]}"))
            continue
        first = folded.get(key.casefold())
        if first is not None:
            skipped.append(
                SkippedFile(
                    path,
                    f"image key {key!r} differs only in case from {first[0]!r} ({first[1]}),"
                    " which is the same file on a case-insensitive file system",
                    key=key,
                )
            )
            continue
        seen[key] = path
        folded[key.casefold()] = (key, path)
        files.append((key, path))
    return DirectoryListing(
        root=url,
        files=tuple(files),
        skipped=tuple(sorted(skipped, key=lambda s: s.path)),
        notes=(),
    )


def file_sizes(
    location: str | os.PathLike[str],
    suffixes: tuple[str, ...] | None = None,
    storage_options: StorageOptions | None = None,
) -> tuple[tuple[str, int], ...]:
    """The files below a folder or a URL (or the file itself) and their sizes: what tells
    one run's inputs from another's without reading them.

    Args:
        location: A local folder or file, or an fsspec URL.
        suffixes: Only files whose lower-cased name ends in one of these (None: every file).
        storage_options: Options of the URL's file system.

    Returns:
        ``(path below the location, size in bytes)`` of each file, sorted; the path of the
        location itself is ``""``, the size of a file that cannot be examined -1. Nothing
        for a local path that does not exist here (a cluster's own disk).

    Raises:
        InputError: A URL cannot be listed.

    Example:
        >>> name, size = file_sizes("fixtures/demo/gt", (".xml",))[0]
        >>> name, size > 0
        ('street_01.xml', True)
    """
    if is_url(location):
        url = os.fspath(location)
        fs, root = _file_system(url, storage_options)
        try:
            found = fs.find(root, detail=True)
        except (OSError, ValueError) as error:
            raise InputError(f"{url}: cannot list: {_reason(error)}") from None
        prefix = root.rstrip("/") + "/"
        entries = [
            ("" if path == root else path[len(prefix) :], int(info.get("size") or 0))
            for path, info in found.items()
            if info.get("type") == "file" and (path == root or path.startswith(prefix))
        ]
    else:
        entries = _local_sizes(os.fspath(location))
    return tuple(
        sorted(
            (name, size)
            for name, size in entries
            if not name or suffixes is None or name.lower().endswith(suffixes)
        )
    )


def _local_sizes(top: str) -> list[tuple[str, int]]:
    """:func:`file_sizes` of a local path, every file below it."""

    def size(path: str) -> int:
        try:
            return os.stat(path).st_size
        except OSError:
            return -1

    if os.path.isfile(top):
        return [("", size(top))]
    entries: list[tuple[str, int]] = []
    for folder, _, names in os.walk(top):
        for name in names:
            path = os.path.join(folder, name)
            relative = os.path.relpath(path, top).replace(os.sep, "/")
            entries.append((relative, size(path)))
    return entries


def location_reader(
    storage_options: StorageOptions | None = None,
) -> Callable[[str, int], bytes]:
    """A function giving a file's bytes, local path or URL, refusing large files unread.

    Args:
        storage_options: Options of the URLs' file systems.

    Returns:
        ``read(path, max_bytes)``, raising :class:`~vocmatch.errors.AnnotationError` (path
        and reason) for a file that cannot be read or is larger than ``max_bytes``: local
        paths by :func:`~vocmatch.readers.regular_files.read_bytes` (so the compiled reader reads
        a chunk of them in one call), URLs through fsspec.
    """
    systems: dict[str, Any] = {}

    def read(path: str, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
        scheme = path.split("://", 1)[0]
        if scheme not in systems:
            try:
                systems[scheme] = _file_system(path, storage_options)[0]
            except InputError as error:
                raise AnnotationError(path, str(error)) from None
        fs = systems[scheme]
        try:
            size = fs.size(path)
            if size is not None and size > max_bytes:
                raise AnnotationError(
                    path, f"file is larger than the {max_bytes:,}-byte limit ({size:,} bytes)"
                )
            with fs.open(path, "rb") as stream:
                data: bytes = stream.read(max_bytes + 1)
        except (OSError, ValueError) as error:
            raise AnnotationError(path, f"cannot read file: {_reason(error)}") from None
        if len(data) > max_bytes:
            raise AnnotationError(path, f"file is larger than the {max_bytes:,}-byte limit")
        return data

    from vocmatch.readers.byte_sources import LocalOrElsewhere

    return LocalOrElsewhere(read, is_url)


def local_file_url(url: str) -> str:
    """A ``file:`` URL as fsspec reads it: the form :meth:`pathlib.Path.as_uri` writes
    (``%20`` for a space) and ``file://localhost/...`` (RFC 8089) name the local path;
    other URLs are returned as given.

    Raises:
        InputError: A ``file:`` URL naming another host (not a local file).

    >>> local_file_url("file:///data/my%20gt"), local_file_url("file://localhost/data/gt")
    ('file:///data/my gt', 'file:///data/gt')
    """
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(url)
    if parts.scheme.lower() != "file":
        return url
    if parts.netloc.lower() not in ("", "localhost"):
        raise InputError(f"{url}: a file URL of the host {parts.netloc!r}, not of this one")
    return "file://" + unquote(parts.path)


def _file_system(url: str, storage_options: StorageOptions | None) -> tuple[Any, str]:
    """The fsspec file system of a URL and the URL's path on it."""
    url = local_file_url(url)
    try:
        import fsspec
    except ImportError:
        raise InputError(
            f"{url}: reading URLs needs fsspec (the remote extra): pip install fsspec"
        ) from None
    try:
        fs, root = fsspec.core.url_to_fs(url, **dict(storage_options or {}))
    except ImportError as error:
        # fsspec names the package the scheme needs (s3fs, gcsfs...).
        raise InputError(f"{url}: {error}") from None
    except (OSError, ValueError) as error:
        raise InputError(f"{url}: {_reason(error)}") from None
    return fs, str(root)


def _reason(error: BaseException) -> str:
    """An error's message on one line, without the exception's class."""
    if isinstance(error, FileNotFoundError):
        return "no such file or folder"
    text = " ".join(str(error).split())
    return text or type(error).__name__


def read_location_columns(
    location: str | os.PathLike[str],
    max_bytes: int = DEFAULT_MAX_BYTES,
    storage_options: StorageOptions | None = None,
) -> ColumnSet:
    """Read every annotation file below a folder or a URL into columns, in this process.

    Raises:
        InputError: The location cannot be listed.
    """
    from vocmatch.readers.scan import read_listed_columns

    listing = list_location(location, storage_options)
    columns = read_listed_columns(
        listing.files, max_bytes, location_reader(storage_options), listing.root
    )
    skipped = sorted((*listing.skipped, *columns.skipped), key=lambda s: s.path)
    return replace(columns, skipped=tuple(skipped), notes=listing.notes)


def read_location_pair(
    gt: str | os.PathLike[str],
    pred: str | os.PathLike[str],
    max_bytes: int = DEFAULT_MAX_BYTES,
    storage_options: StorageOptions | None = None,
) -> tuple[ColumnSet, ColumnSet]:
    """Read a ground-truth and a prediction location (folders or URLs) into columns.

    Raises:
        InputError: A location cannot be listed, or the ground truth holds no readable file.
    """
    gt_columns = read_location_columns(gt, max_bytes, storage_options)
    if not gt_columns.keys:
        raise no_annotation_files(os.fspath(gt), gt_columns.skipped)
    return gt_columns, read_location_columns(pred, max_bytes, storage_options)
