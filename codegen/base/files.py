"""File helpers shared by the data sets (`codegen.data`), the build directory
(`codegen.artefact`) and the model and basis hashes (`codegen.frontend`): a content digest and a
reproducible `.npz` writer. No policy: what is hashed or written is the caller's."""

from __future__ import annotations

import hashlib
import io
import os
import zipfile
from pathlib import Path

import numpy as np

from codegen.base.errors import CodegenError, ConfigError


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The file's SHA-256, hex, read in 1 MiB chunks (a data set's arrays are tens of MB)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def write_npz(
    path: str | os.PathLike[str], arrays: dict[str, np.ndarray], *, compresslevel: int = 1
) -> None:
    """Write an `.npz` readable by `np.load`, byte-identical for identical arrays.

    `np.savez` stamps the current time into the zip entries; this writer uses a fixed date.
    The file is written next to its destination and renamed, so readers never see half a file.
    """
    tmp = f"{os.fspath(path)}.tmp"
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, allowZip64=True) as zf:
        for key, arr in arrays.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.ascontiguousarray(arr), allow_pickle=False)
            info = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, buf.getvalue(), compresslevel=compresslevel)
    os.replace(tmp, path)


def writable_dir(
    out: Path, flag: str, example: str, error: type[CodegenError] = ConfigError
) -> Path:
    """``out`` (the value of ``flag``) is, or can be made, a directory this process writes:
    checked before any work, the ``error`` naming the path, why, and a directory to use
    instead (``example``)."""
    if out.exists() and not out.is_dir():
        raise error(f"{flag} {out} is a file, not a directory: name a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise error(
            f"{flag} {out}: cannot write there ({exc.strerror or exc}); choose a directory you "
            f"can write, e.g. {example}"
        ) from None
    return out
