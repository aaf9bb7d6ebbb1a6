"""Rebuild the real text-to-image development set's images from their public sources.

    python benchmarks/real_t2i/rebuild.py --out DIR                 # from GitHub (raw files at each commit)
    python benchmarks/real_t2i/rebuild.py --out DIR --mirror MIRRORS # from local git copies, no network
    python benchmarks/real_t2i/rebuild.py --out DIR --check          # only verify what DIR holds

No image is committed to this repository: each manifest entry (``manifest.jsonl``, see ``manifest.py``) names its
source file by repository, path and commit. The file is read from ``--mirror`` when given (a folder of git
directories: ``MIRRORS/owner+name/repo``, ``MIRRORS/owner+name``, ``MIRRORS/owner+name.git`` or
``MIRRORS/owner/name``, bare or not, each holding the commit), else downloaded from
``https://raw.githubusercontent.com/<owner>/<name>/<commit>/<path>``; its bytes must have the recorded ``sha256``.
A crop is cut out (``[x0, y0, x1, y1]`` in source pixels, RGB) and saved as ``<id>.png``, its pixels checked against
``crop_sha256``; an uncropped source is written as it is (``<id><extension>``). Files already present and matching
are kept (``--force`` rewrites them), so an interrupted run resumes. Every write is atomic.

Exit status: 0 when every selected image is present and verified, 1 when any could not be rebuilt (each named on
stderr with the reason), 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

from manifest import MANIFEST, file_name, load_valid, pixels_sha256  # noqa: E402

from logicval_hf.common.atomic import atomic_write_bytes  # noqa: E402

RAW_URL = "https://raw.githubusercontent.com/{repository}/{commit}/{path}"
#: environment variable naming the default ``--out`` folder
OUT_ENV = "LOGICVAL_REAL_T2I"


class SourceError(RuntimeError):
    """A source file could not be read, or is not the recorded one."""


def mirror_git_dir(mirrors: Path, repository: str) -> Path | None:
    """The git directory of ``repository`` (``owner/name``) under ``mirrors``, or None when there is none."""
    owner, name = repository.split("/", 1)
    for cand in (mirrors / f"{owner}+{name}" / "repo", mirrors / f"{owner}+{name}", mirrors / f"{owner}+{name}.git",
                 mirrors / owner / name):
        for git_dir in (cand / ".git", cand):
            if (git_dir / "HEAD").is_file() and (git_dir / "objects").is_dir():
                return git_dir
    return None


def read_mirror(mirrors: Path, entry: dict[str, Any]) -> bytes:
    git_dir = mirror_git_dir(mirrors, entry["repository"])
    if git_dir is None:
        raise SourceError(f"no git copy of {entry['repository']} under {mirrors}")
    res = subprocess.run(["git", f"--git-dir={git_dir}", "cat-file", "blob", f"{entry['commit']}:{entry['path']}"],
                         capture_output=True, check=False)
    if res.returncode != 0:
        raise SourceError(f"{entry['repository']}@{entry['commit'][:10]} has no {entry['path']!r} in {git_dir} "
                          f"({res.stderr.decode(errors='replace').strip()})")
    return res.stdout


def read_url(entry: dict[str, Any], tries: int = 3, timeout: float = 60.0) -> bytes:
    url = RAW_URL.format(repository=entry["repository"], commit=entry["commit"],
                         path=urllib.parse.quote(entry["path"]))
    last: Exception | None = None
    for attempt in range(tries):
        try:
            with urllib.request.urlopen(url, timeout=timeout) as r:
                return r.read()
        except OSError as e:  # network faults (URLError, timeouts, HTTP errors) are retried, then reported
            last = e
            time.sleep(2 ** attempt)
    raise SourceError(f"could not download {url}: {last}")


def source_bytes(entry: dict[str, Any], mirrors: Path | None) -> bytes:
    data = read_mirror(mirrors, entry) if mirrors is not None else read_url(entry)
    digest = hashlib.sha256(data).hexdigest()
    if digest != entry["sha256"]:
        raise SourceError(f"{entry['repository']}/{entry['path']} has sha256 {digest[:16]}..., the manifest records "
                          f"{entry['sha256'][:16]}... (a Git LFS pointer, or another version of the file)")
    return data


def cropped(entry: dict[str, Any], data: bytes) -> tuple[bytes, str]:
    """The PNG of ``entry``'s crop of the source ``data``, and the crop's pixel digest."""
    import numpy as np
    from PIL import Image

    with Image.open(io.BytesIO(data)) as im:
        rgb = np.asarray(im.convert("RGB"))
    x0, y0, x1, y1 = entry["crop"]
    if x1 > rgb.shape[1] or y1 > rgb.shape[0]:
        raise SourceError(f"crop {entry['crop']} leaves the {rgb.shape[1]}x{rgb.shape[0]} source")
    part = np.ascontiguousarray(rgb[y0:y1, x0:x1])
    buf = io.BytesIO()
    Image.fromarray(part).save(buf, format="PNG")
    return buf.getvalue(), pixels_sha256(part)


def verify_file(entry: dict[str, Any], path: Path) -> str | None:
    """Why the file at ``path`` is not ``entry``'s image (None: it is)."""
    if not path.is_file():
        return "missing"
    if entry["crop"] is None:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        return None if digest == entry["sha256"] else f"sha256 {digest[:16]}... differs from the manifest's"
    import numpy as np
    from PIL import Image

    try:
        with Image.open(path) as im:
            rgb = np.asarray(im.convert("RGB"))
    except OSError as e:
        return f"unreadable ({e})"
    digest = pixels_sha256(rgb)
    return None if digest == entry["crop_sha256"] else f"pixel sha256 {digest[:16]}... differs from the manifest's"


def rebuild_one(entry: dict[str, Any], out: Path, mirrors: Path | None, force: bool = False) -> str:
    """Rebuild one image into ``out``: ``kept`` (already there and verified) or ``written``.

    Raises:
        SourceError: the source could not be read, is not the recorded file, or its crop is not the recorded one.
    """
    target = out / file_name(entry)
    if not force and verify_file(entry, target) is None:
        return "kept"
    data = source_bytes(entry, mirrors)
    if entry["crop"] is None:
        atomic_write_bytes(target, data)
        return "written"
    png, digest = cropped(entry, data)
    if digest != entry["crop_sha256"]:
        raise SourceError(f"the crop's pixel sha256 {digest[:16]}... differs from the manifest's "
                          f"{entry['crop_sha256'][:16]}...")
    atomic_write_bytes(target, png)
    return "written"


def existing_dir(value: str) -> Path:
    p = Path(value)
    if not p.is_dir():
        raise argparse.ArgumentTypeError(f"{value!r}: no such folder")
    return p


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manifest", type=Path, default=MANIFEST,
                    help="the manifest (default: the one beside this script)")
    ap.add_argument("--out", type=Path, default=os.environ.get(OUT_ENV) or None,
                    help=f"folder the images are written to (default: ${OUT_ENV})")
    ap.add_argument("--mirror", type=existing_dir, default=None,
                    help="folder of local git copies of the source repositories (owner+name/repo, owner+name, "
                         "owner+name.git or owner/name); without it the files are downloaded from GitHub")
    ap.add_argument("--ids", nargs="+", default=None, help="rebuild only these ids")
    ap.add_argument("--split", choices=("dev", "heldout", "all"), default="all", help="rebuild only one part")
    ap.add_argument("--check", action="store_true", help="only verify the images already in --out, fetch nothing")
    ap.add_argument("--force", action="store_true", help="rewrite images even where a verified copy exists")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    if args.out is None:
        ap.error(f"give --out DIR (or set ${OUT_ENV})")
    try:
        entries = load_valid(args.manifest)
    except ValueError as e:
        ap.error(str(e))
    chosen = [e for e in entries if args.split == "all" or e["split"] == args.split]
    if args.ids:
        known = {e["id"] for e in entries}
        unknown = [i for i in args.ids if i not in known]
        if unknown:
            ap.error(f"unknown id {unknown[0]!r}")
        chosen = [e for e in chosen if e["id"] in set(args.ids)]
    counts = {"kept": 0, "written": 0, "failed": 0}
    for e in chosen:
        if args.check:
            why = verify_file(e, args.out / file_name(e))
            status = "kept" if why is None else "failed"
            if why is not None:
                print(f"{e['id']}: {why}", file=sys.stderr)
        else:
            try:
                status = rebuild_one(e, args.out, args.mirror, args.force)
            except SourceError as err:
                status = "failed"
                print(f"{e['id']}: {err}", file=sys.stderr)
        counts[status] += 1
    verb = "verified" if args.check else "kept"
    print(f"{len(chosen)} images: {counts['written']} written, {counts['kept']} {verb}, {counts['failed']} failed "
          f"-> {args.out}")
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
