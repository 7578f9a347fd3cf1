"""`codegen basis`: the ELaTTA latent subspace V_k from N clean source latents.

Offline step of the paper (§3): take N random source samples, encode them once (z = h_T),
centre, truncated SVD, keep the top-k right singular vectors as V_k (D x k, orthonormal
columns). Only V_k and a few statistics are kept; the latents themselves are discarded.

File (``numpy.savez``): ``V`` (D, k) float64, ``singular_values`` (k,) float64 (of the centred
latent matrix, descending), ``mean`` (D,) float64 (the source mean, kept for diagnostics; ELaTTA
itself only uses V), ``n``, ``k``, ``seed`` (int64 scalars), ``model_sha256`` (the checkpoint the
latents came from), ``explained_variance`` (fraction of the centred energy that V_k captures).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from codegen.base.errors import CodegenError, ConfigError
from codegen.frontend.cliargs import (
    Declared,
    add_model_arguments,
    declared_from_args,
    declared_from_toml,
    merge,
)

HELP = "compute the ELaTTA subspace V_k (truncated SVD of N clean source latents)"

# Columns of V_k are orthonormal to this tolerance after a float64 SVD; a file further off was
# edited or corrupted.
ORTHO_TOL = 1e-6


@dataclass(frozen=True)
class Basis:
    V: np.ndarray
    singular_values: np.ndarray
    mean: np.ndarray
    n: int
    k: int
    seed: int
    model_sha256: str
    explained_variance: float

    @property
    def dim(self) -> int:
        return int(self.V.shape[0])


def compute_basis(latents: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Z [N, D] -> (V [D, k], top-k singular values, mean [D], explained variance fraction).

    Signs are fixed so the largest-magnitude entry of each column is positive: SVD signs are
    arbitrary and LAPACK builds differ, and a reproducible V_k keeps generated C byte-stable.
    """
    z = np.asarray(latents, dtype=np.float64)
    if z.ndim != 2:
        raise ConfigError(f"latents must be 2-D [N, D], got shape {z.shape}")
    n, d = z.shape
    # Centring removes one degree of freedom, so at most N-1 directions carry variance.
    if not 1 <= k <= min(n - 1, d):
        raise ConfigError(
            f"--k {k} is out of range: need 1 <= k <= min(N-1, D) = {min(n - 1, d)} "
            f"(N={n} latents of dimension D={d})"
        )
    if not np.all(np.isfinite(z)):
        raise CodegenError("source latents contain NaN/inf; the model checkpoint is broken")
    mean = z.mean(axis=0)
    _, s, vt = np.linalg.svd(z - mean, full_matrices=False)
    v = vt[:k].T.copy()
    idx = np.argmax(np.abs(v), axis=0)
    signs = np.sign(v[idx, np.arange(k)])
    signs[signs == 0] = 1.0
    v *= signs
    total = float(np.sum(s**2))
    explained = float(np.sum(s[:k] ** 2) / total) if total > 0 else 0.0
    return v, s[:k].copy(), mean, explained


def save_basis(path: str | os.PathLike[str], basis: Basis) -> None:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "wb") as fh:
        np.savez(
            fh,
            V=basis.V.astype(np.float64),
            singular_values=basis.singular_values.astype(np.float64),
            mean=basis.mean.astype(np.float64),
            n=np.int64(basis.n),
            k=np.int64(basis.k),
            seed=np.int64(basis.seed),
            model_sha256=np.str_(basis.model_sha256),
            explained_variance=np.float64(basis.explained_variance),
        )


def load_basis(path: str | os.PathLike[str], model_sha256: str | None = None) -> Basis:
    """Load and validate a basis file; with ``model_sha256`` also check it belongs to that model."""
    src = str(path)
    if not Path(src).is_file():
        raise CodegenError(f"basis file not found: {src}")
    try:
        with np.load(src, allow_pickle=False) as npz:
            data = {key: npz[key] for key in npz.files}
    except Exception as exc:
        raise CodegenError(f"{src}: not a readable .npz basis file ({exc})") from exc
    want = ("V", "singular_values", "mean", "n", "k", "seed", "model_sha256")
    missing = [key for key in want if key not in data]
    if len(missing) == len(want):  # none of a basis's arrays: another kind of .npz
        raise CodegenError(
            f"--basis {src} is not a basis file (its arrays: {', '.join(sorted(data)) or 'none'}; "
            f"a basis has {', '.join(want)}); make one with `codegen basis --model M --data D "
            "--out basis.npz`"
        )
    if missing:
        raise CodegenError(
            f"--basis {src}: arrays {', '.join(missing)} missing (a basis written by another "
            "version of `codegen basis`?); make it again with `codegen basis`"
        )
    v = np.asarray(data["V"], dtype=np.float64)
    k = int(data["k"])
    if v.ndim != 2 or v.shape[1] != k or k < 1:
        raise CodegenError(f"{src}: basis 'V' has shape {v.shape}; expected (D, k={k})")
    if not np.all(np.isfinite(v)):
        raise CodegenError(f"{src}: basis 'V' contains NaN/inf")
    gram_err = float(np.max(np.abs(v.T @ v - np.eye(k))))
    if gram_err > ORTHO_TOL:
        raise CodegenError(
            f"{src}: basis 'V' columns are not orthonormal (max |V^T V - I| = {gram_err:.2e}, "
            f"allowed {ORTHO_TOL:.0e})"
        )
    mean = np.asarray(data["mean"], dtype=np.float64)
    if mean.shape != (v.shape[0],):
        raise CodegenError(f"{src}: basis 'mean' has shape {mean.shape}; expected ({v.shape[0]},)")
    sv = np.asarray(data["singular_values"], dtype=np.float64)
    if sv.shape != (k,):
        raise CodegenError(f"{src}: basis 'singular_values' has shape {sv.shape}; expected ({k},)")
    sha = str(data["model_sha256"])
    if model_sha256 is not None and sha != model_sha256:
        raise CodegenError(
            f"{src}: basis was computed from model sha256 {sha[:12]}…, but the model given has "
            f"{model_sha256[:12]}…; rerun `codegen basis` for this model"
        )
    explained = float(data["explained_variance"]) if "explained_variance" in data else float("nan")
    return Basis(
        V=v,
        singular_values=sv,
        mean=mean,
        n=int(data["n"]),
        k=k,
        seed=int(data["seed"]),
        model_sha256=sha,
        explained_variance=explained,
    )


def basis_from_model(
    model_path: str | os.PathLike[str],
    data_dir: str | os.PathLike[str],
    n: int,
    k: int,
    seed: int,
    trust_pickle: bool = False,
    declared: Declared | None = None,
) -> Basis:
    """Encode N random clean training clips with the model (any file `codegen.frontend.importer`
    reads, with what ``declared`` states about it; the latent is the final Linear's input) and
    compute V_k. The model passes the same checks as in `codegen build`: its structure, its
    data set, and the float twin against its own forward pass."""
    from codegen.base.files import file_sha256
    from codegen.data import load_split
    from codegen.frontend.importer import load_model, resolve_pooling, verify_against_user
    from codegen.frontend.model import encode_numpy
    from codegen.ir.meta import features_for

    imported = load_model(
        model_path, data_dir=data_dir, trust_pickle=trust_pickle, declared=declared
    )
    split = load_split(data_dir, "train")
    # the latent is the final Linear's input: the user's pooling, told by running the model
    probe = features_for(split.pcm[:64], imported.meta)
    imported = resolve_pooling(imported, probe)
    verify_against_user(imported, probe)
    model, meta = imported.twin, imported.meta
    total = len(split.labels)
    if not 2 <= n <= total:
        raise ConfigError(f"--n {n} is out of range: need 2 <= n <= {total} (training clips)")
    rng = np.random.default_rng(seed)
    # Sorted so the latent matrix does not depend on the draw order, only on the chosen set.
    idx = np.sort(rng.choice(total, size=n, replace=False))
    z = encode_numpy(model, features_for(split.pcm[idx], meta))
    v, s, mean, explained = compute_basis(z, k)
    return Basis(
        V=v,
        singular_values=s,
        mean=mean,
        n=n,
        k=k,
        seed=seed,
        model_sha256=file_sha256(model_path),
        explained_variance=explained,
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    parser.add_argument("--data", required=True, help="data directory from `codegen data`")
    parser.add_argument("--n", type=int, default=50, help="source latents to use (default 50)")
    parser.add_argument("--k", type=int, default=2, help="subspace dimension (default 2, KWS)")
    parser.add_argument("--seed", type=int, default=0, help="seed for choosing the N clips")
    parser.add_argument("--out", required=True, help="output .npz")
    parser.add_argument(
        "--config",
        help="a build config whose [model] and [features] state what the model file cannot "
        "show (as in `codegen build`)",
    )
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")


def run(args: argparse.Namespace) -> int:
    import torch

    if args.threads < 1:
        raise ConfigError(f"--threads {args.threads} must be >= 1")
    torch.set_num_threads(args.threads)
    declared = declared_from_args(args)
    if args.config:
        declared = merge(declared, declared_from_toml(args.config))
    basis = basis_from_model(
        args.model,
        args.data,
        args.n,
        args.k,
        args.seed,
        trust_pickle=args.trust_pickle,
        declared=declared,
    )
    save_basis(args.out, basis)
    sv = ", ".join(f"{s:.4g}" for s in basis.singular_values)
    print(
        f"wrote {args.out}: V {basis.V.shape[0]}x{basis.k} from N={basis.n} clean train latents "
        f"(seed {basis.seed}); singular values [{sv}]; explains "
        f"{100 * basis.explained_variance:.1f}% of the centred variance"
    )
    return 0
