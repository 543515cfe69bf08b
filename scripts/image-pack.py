#!/usr/bin/env python3
"""Build one FROM-scratch target of the Dockerfile into an image archive, without Docker.

The Kubernetes test cluster has containerd but no Docker, and a fresh machine may
have neither a Docker engine nor a registry. This builds the same image that
``docker build --target T`` builds from the same staged context: the instructions
of the satpage Dockerfile (``ARG``, ``FROM scratch AS``, ``LABEL``, ``COPY``, ``USER``,
``EXPOSE``, ``ENV``, ``WORKDIR``, ``ENTRYPOINT``/``CMD`` in JSON form) and no others
(anything else is an error naming the line). All COPY instructions go into one
layer; files keep their mode, owner root unless ``--chown``; timestamps are zero, so
the archive is reproducible. The archive is an OCI image layout that also carries
a ``docker save`` style ``manifest.json``: ``ctr images import`` and ``docker load``
both take it.

Usage:
  image-pack.py --context DIR --target NAME --tag REF --out FILE.tar
                [--dockerfile Dockerfile] [--build-arg K=V ...]
Prints ``REF<TAB>SIZE_BYTES<TAB>DIGEST`` (uncompressed layer size, manifest digest).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import io
import json
import re
import shlex
import sys
import tarfile
from pathlib import Path, PurePosixPath

__all__ = ["Stage", "parse_dockerfile", "pack"]

# What Docker's builder puts in the config of a FROM-scratch image without ENV PATH.
DEFAULT_PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_VAR = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


@dataclasses.dataclass
class Stage:
    """One build stage: what its instructions put into the image config and layer."""

    name: str
    labels: dict[str, str] = dataclasses.field(default_factory=dict)
    env: list[str] = dataclasses.field(default_factory=list)
    copies: list[tuple[list[str], str, str | None]] = dataclasses.field(default_factory=list)
    user: str = ""
    workdir: str = ""
    exposed: list[str] = dataclasses.field(default_factory=list)
    entrypoint: list[str] | None = None
    cmd: list[str] | None = None


def _lines(text: str) -> list[tuple[int, str]]:
    """Logical lines (continuations joined, comments and blanks dropped) with line numbers."""
    out: list[tuple[int, str]] = []
    buf, start = "", 0
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not buf and (not line or line.startswith("#")):
            continue
        if buf and line.startswith("#"):
            continue
        if not buf:
            start = no
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        out.append((start, buf + line))
        buf = ""
    if buf:
        out.append((start, buf))
    return out


def _subst(word: str, args: dict[str, str], where: str) -> str:
    def repl(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        if name not in args:
            raise ValueError(f"{where}: ${name} is not a declared ARG")
        return args[name]

    return _VAR.sub(repl, word)


def parse_dockerfile(text: str, target: str, build_args: dict[str, str]) -> Stage:
    """The stage named ``target``; raises ValueError naming the line of anything unsupported."""
    global_args: dict[str, str] = {}
    stage: Stage | None = None
    scope: dict[str, str] = {}
    found: Stage | None = None
    for no, line in _lines(text):
        where = f"Dockerfile line {no}"
        instr, _, rest = line.partition(" ")
        instr, rest = instr.upper(), rest.strip()
        if instr == "FROM":
            if found is not None:
                break
            words = rest.split()
            if len(words) != 3 or words[0] != "scratch" or words[1].upper() != "AS":
                raise ValueError(f"{where}: only 'FROM scratch AS name' is supported, got {rest!r}")
            stage, scope = Stage(words[2]), {}
            if stage.name == target:
                found = stage
            continue
        if instr == "ARG":
            name, eq, default = rest.partition("=")
            if stage is None:
                global_args[name] = build_args.get(name, default)
            elif name in build_args:
                scope[name] = build_args[name]
            elif eq:
                scope[name] = default
            elif name in global_args:
                scope[name] = global_args[name]
            else:
                scope[name] = ""
            continue
        if stage is None:
            raise ValueError(f"{where}: {instr} before the first FROM")
        words = [_subst(w, scope, where) for w in shlex.split(rest)]
        if instr == "LABEL":
            for w in words:
                k, eq, v = w.partition("=")
                if not eq:
                    raise ValueError(f"{where}: LABEL needs key=value, got {w!r}")
                stage.labels[k] = v
        elif instr == "ENV":
            for w in words:
                if "=" not in w:
                    raise ValueError(f"{where}: ENV needs key=value, got {w!r}")
                stage.env.append(w)
        elif instr == "COPY":
            chown = None
            while words and words[0].startswith("--"):
                flag = words.pop(0)
                if not flag.startswith("--chown="):
                    raise ValueError(f"{where}: COPY flag {flag!r} is not supported")
                chown = flag.split("=", 1)[1]
            if len(words) < 2:
                raise ValueError(f"{where}: COPY needs sources and a destination")
            stage.copies.append((words[:-1], words[-1], chown))
        elif instr == "USER":
            stage.user = words[0]
        elif instr == "WORKDIR":
            stage.workdir = words[0]
        elif instr == "EXPOSE":
            stage.exposed += [w if "/" in w else f"{w}/tcp" for w in words]
        elif instr in ("ENTRYPOINT", "CMD"):
            try:
                value = json.loads(rest)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{where}: {instr} must be in JSON form (no shell in a scratch image)") from exc
            value = [_subst(v, scope, where) for v in value]
            if instr == "ENTRYPOINT":
                stage.entrypoint = value
            else:
                stage.cmd = value
        else:
            raise ValueError(f"{where}: instruction {instr} is not supported by image-pack")
    if found is None:
        raise ValueError(f"target {target!r} is not a stage of the Dockerfile")
    return found


def _owner(chown: str | None) -> tuple[int, int]:
    if not chown:
        return 0, 0
    u, _, g = chown.partition(":")
    if not u.isdigit() or not (g or u).isdigit():
        raise ValueError(f"--chown={chown}: only numeric uid:gid is supported")
    return int(u), int(g or u)


def _layer(stage: Stage, context: Path, workdir: str) -> bytes:
    """One uncompressed, reproducible tar layer holding every COPY (and the WORKDIR)."""
    entries: dict[str, tuple[Path | None, int, int]] = {}  # image path -> (source, uid, gid)

    def add_dirs(path: PurePosixPath) -> None:
        for parent in reversed(path.parents):
            if str(parent) != "/":
                entries.setdefault(str(parent), (None, 0, 0))

    for sources, dest, chown in stage.copies:
        uid, gid = _owner(chown)
        for src in sources:
            s = (context / src).resolve()
            if not s.is_relative_to(context.resolve()) or not s.exists():
                raise ValueError(f"COPY source {src!r} is not in the context {context}")
            if s.is_dir():
                for f in sorted(s.rglob("*")):
                    target = PurePosixPath(dest) / f.relative_to(s).as_posix()
                    add_dirs(target)
                    entries[str(target)] = (f, uid, gid)
            else:
                target = PurePosixPath(dest) / s.name if dest.endswith("/") else PurePosixPath(dest)
                add_dirs(target)
                entries[str(target)] = (s, uid, gid)
    if workdir and workdir not in entries:
        add_dirs(PurePosixPath(workdir) / "x")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(entries):
            src, uid, gid = entries[path]
            info = tarfile.TarInfo(path.lstrip("/"))
            info.uid, info.gid, info.mtime = uid, gid, 0
            if src is None or src.is_dir():
                info.type, info.mode = tarfile.DIRTYPE, (src.stat().st_mode & 0o7777 if src else 0o755)
                tar.addfile(info)
            elif src.is_symlink():
                info.type, info.linkname, info.mode = tarfile.SYMTYPE, src.readlink().as_posix(), 0o777
                tar.addfile(info)
            else:
                data = src.read_bytes()
                info.size, info.mode = len(data), src.stat().st_mode & 0o7777
                tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _blob(tar: tarfile.TarFile, data: bytes) -> str:
    digest = hashlib.sha256(data).hexdigest()
    info = tarfile.TarInfo(f"blobs/sha256/{digest}")
    info.size, info.mtime, info.mode = len(data), 0, 0o644
    tar.addfile(info, io.BytesIO(data))
    return digest


def pack(stage: Stage, context: Path, ref: str, out: Path) -> tuple[int, str]:
    """Write the archive; return (layer size in bytes, manifest digest)."""
    layer = _layer(stage, context, stage.workdir)
    layer_digest = hashlib.sha256(layer).hexdigest()
    env = stage.env if any(e.startswith("PATH=") for e in stage.env) else [DEFAULT_PATH, *stage.env]
    config: dict[str, object] = {"Env": env, "Labels": stage.labels}
    if stage.user:
        config["User"] = stage.user
    if stage.workdir:
        config["WorkingDir"] = stage.workdir
    if stage.exposed:
        config["ExposedPorts"] = {p: {} for p in stage.exposed}
    if stage.entrypoint is not None:
        config["Entrypoint"] = stage.entrypoint
    if stage.cmd is not None:
        config["Cmd"] = stage.cmd
    image_config = {
        "architecture": "amd64", "os": "linux", "created": "1970-01-01T00:00:00Z",
        "config": config,
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{layer_digest}"]},
        "history": [{"created": "1970-01-01T00:00:00Z", "created_by": f"image-pack --target {stage.name}"}],
    }
    cfg = json.dumps(image_config, sort_keys=True).encode()
    tmp = out.with_suffix(out.suffix + ".tmp")
    with tarfile.open(tmp, mode="w", format=tarfile.PAX_FORMAT) as tar:
        _blob(tar, layer)
        cfg_digest = _blob(tar, cfg)
        manifest = json.dumps({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                       "digest": f"sha256:{cfg_digest}", "size": len(cfg)},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                        "digest": f"sha256:{layer_digest}", "size": len(layer)}],
            "annotations": {k: v for k, v in stage.labels.items() if k.startswith("org.opencontainers.")},
        }, sort_keys=True).encode()
        man_digest = _blob(tar, manifest)
        index = {"schemaVersion": 2, "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": f"sha256:{man_digest}", "size": len(manifest),
            "annotations": {"io.containerd.image.name": ref,
                            "org.opencontainers.image.ref.name": ref.rsplit(":", 1)[-1]}}]}
        docker = [{"Config": f"blobs/sha256/{cfg_digest}", "RepoTags": [ref],
                   "Layers": [f"blobs/sha256/{layer_digest}"]}]
        for name, obj in (("oci-layout", {"imageLayoutVersion": "1.0.0"}), ("index.json", index),
                          ("manifest.json", docker)):
            data = json.dumps(obj, sort_keys=True).encode()
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))
    tmp.replace(out)
    return len(layer), f"sha256:{man_digest}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dockerfile", type=Path, default=Path(__file__).resolve().parents[1] / "Dockerfile")
    ap.add_argument("--context", type=Path, required=True)
    ap.add_argument("--target", required=True)
    ap.add_argument("--tag", required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--build-arg", action="append", default=[], metavar="K=V")
    a = ap.parse_args(argv)
    try:
        build_args = dict(kv.split("=", 1) for kv in a.build_arg)
        stage = parse_dockerfile(a.dockerfile.read_text(), a.target, build_args)
        size, digest = pack(stage, a.context, a.tag, a.out)
    except (ValueError, OSError) as exc:
        print(f"image-pack: error: {exc}", file=sys.stderr)
        return 2
    print(f"{a.tag}\t{size}\t{digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
