"""Build hook of the satpage wheel: the static Go binaries ride along.

With ``$SATPAGE_WHEEL_BIN`` naming a folder of binaries (``make wheels`` builds
them), the wheel carries satnode, gateway and satcheck in ``satpage/bin/`` and is
tagged for this platform only (``py3-none-linux_x86_64`` here), as ruff and
esbuild ship theirs; ``satpage.cluster.local.find_binary`` looks there. Without
it (an editable install, a plain ``pip wheel``) the wheel is pure Python and the
binaries come from the checkout's ``bin/``. Everything else is in pyproject.toml.
"""

import os
import shutil
import sysconfig
from pathlib import Path

from setuptools import setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_py import build_py

#: what `satpage cluster up` and `satpage cluster chaos` start (satload is a bench tool)
BINARIES = ("satnode", "gateway", "satcheck")


def _bin_dir() -> Path | None:
    src = os.environ.get("SATPAGE_WHEEL_BIN")
    if not src:
        return None
    missing = [b for b in BINARIES if not (Path(src) / b).is_file()]
    if missing:
        raise SystemExit(f"SATPAGE_WHEEL_BIN={src}: {', '.join(missing)} missing (make build)")
    return Path(src)


class BuildPyWithBinaries(build_py):
    def run(self):
        super().run()
        src = _bin_dir()
        if src is None:
            return
        dest = Path(self.build_lib) / "satpage" / "bin"
        dest.mkdir(parents=True, exist_ok=True)
        for name in BINARIES:
            shutil.copy2(src / name, dest / name)
            (dest / name).chmod(0o755)


class PlatformWheel(bdist_wheel):
    def get_tag(self):
        if _bin_dir() is None:
            return super().get_tag()
        # Go binaries, not a CPython extension: any Python 3, this platform.
        return "py3", "none", sysconfig.get_platform().replace("-", "_").replace(".", "_")


setup(cmdclass={"build_py": BuildPyWithBinaries, "bdist_wheel": PlatformWheel})
