#!/usr/bin/env python3
"""The controller image that `make image` (tools/image/build) wrote is one a cluster can run.

- skopeo reads the OCI archive; its config runs /usr/local/bin/dovetail as 65532:65532;
- the root file system has no shell, and the image's own loader resolves every shared library
  of the binary (nothing from the build machine);
- `dovetail version` and `dovetail controller --help` run in it as uid 65532: in a container
  started by crun from the runtime bundle umoci unpacks, where this machine allows one, else in
  its root file system (chroot), and the test says which;
- the binary in the image was built from the same commit as the test build, so a stale archive
  fails instead of passing;
- its size is reported: the compressed layers must stay under 60 MiB.

Usage: image_test.py IMAGE_DIR TEST_BUILD_DOVETAIL
  IMAGE_DIR holds image.env and the archive it names (tools/image/build --out).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

MAX_COMPRESSED_BYTES = 60 * 1024 * 1024
NONROOT = 65532


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)


def commit_of(version_line: str) -> str:
    m = re.search(r"commit ([0-9a-f]+)", version_line)
    return m.group(1) if m else ""


class Container:
    """Runs a command in the unpacked bundle: crun when it works here, else chroot."""

    def __init__(self, bundle: Path):
        self.bundle = bundle
        self.rootfs = bundle / "rootfs"
        self.config = json.loads((bundle / "config.json").read_text())
        self.how = None
        self._n = 0

    def _crun(self, args, private_cgroup2: bool):
        config = json.loads(json.dumps(self.config))
        config["process"]["args"] = args
        config["process"]["terminal"] = False
        (self.bundle / "config.json").write_text(json.dumps(config))
        self._n += 1
        crun = ["crun", "--cgroup-manager=disabled", "run", "--bundle", str(self.bundle),
                f"dovetail-image-test-{os.getpid()}-{self._n}"]
        if private_cgroup2:
            # crun refuses a hybrid cgroup v1/v2 host; a private mount namespace with only the
            # unified hierarchy mounted lets it run without touching the host's mounts.
            crun = ["unshare", "--mount", "sh", "-c",
                    'umount -l /sys/fs/cgroup && mount -t cgroup2 none /sys/fs/cgroup && exec "$@"',
                    "sh"] + crun
        return run(crun)

    def _chroot(self, args):
        return run(["chroot", f"--userspec={NONROOT}:{NONROOT}", str(self.rootfs)] + args)

    def exec(self, args):
        if self.how is None:
            attempts = []
            if shutil.which("crun"):
                attempts += [("crun", lambda a: self._crun(a, False)),
                             ("crun in a private cgroup2 mount namespace",
                              lambda a: self._crun(a, True))]
            attempts.append(("chroot (no container runtime works on this machine)", self._chroot))
            for name, fn in attempts:
                r = fn(args)
                if r.returncode == 0:
                    self.how = (name, fn)
                    print(f"image_test: running the image with {name}")
                    return r
                print(f"image_test: {name} did not run it: {(r.stderr or r.stdout).strip()[:300]}")
            return r
        return self.how[1](args)


def main() -> int:
    image_dir = Path(sys.argv[1])
    test_binary = sys.argv[2]
    env_file = image_dir / "image.env"
    if not env_file.exists():
        print(f"FAIL no image in {image_dir}: `make image` builds it (`make test` does)")
        return 1
    env = dict(line.split("=", 1) for line in env_file.read_text().splitlines() if "=" in line)
    archive, tag = image_dir / env["ARCHIVE"], env["TAG"]
    failures = []

    # skopeo, an independent reader of the OCI format.
    r = run(["skopeo", "inspect", "--config", f"oci-archive:{archive}:{tag}"])
    if r.returncode != 0:
        print(f"FAIL skopeo cannot read {archive}: {r.stderr.strip()}")
        return 1
    config = json.loads(r.stdout)["config"]
    if config.get("User") != f"{NONROOT}:{NONROOT}":
        failures.append(f"image user is {config.get('User')!r}, want {NONROOT}:{NONROOT}")
    if config.get("Entrypoint") != ["/usr/local/bin/dovetail"]:
        failures.append(f"entrypoint is {config.get('Entrypoint')}")

    with tempfile.TemporaryDirectory(prefix="dovetail-image-test-") as tmp:
        layout, bundle = Path(tmp) / "layout", Path(tmp) / "bundle"
        with tarfile.open(archive) as t:
            t.extractall(layout)
        r = run(["umoci", "unpack", "--image", f"{layout}:{tag}", str(bundle)])
        if r.returncode != 0:
            print(f"FAIL umoci unpack: {r.stderr.strip()}")
            return 1
        container = Container(bundle)
        rootfs = container.rootfs
        user = container.config["process"]["user"]
        if (user.get("uid"), user.get("gid")) != (NONROOT, NONROOT):
            failures.append(f"runtime bundle user is {user}, want uid/gid {NONROOT}")

        shells = [s for s in ("bin/sh", "bin/bash", "bin/dash", "usr/bin/sh", "usr/bin/bash",
                              "usr/bin/dash", "bin/busybox") if (rootfs / s).exists()]
        if shells:
            failures.append(f"the image has a shell: {shells}")

        # The image's own loader lists what the binary loads; with --list nothing runs.
        r = run(["chroot", str(rootfs), "/lib64/ld-linux-x86-64.so.2", "--list",
                 "/usr/local/bin/dovetail"])
        unresolved = [l.strip() for l in r.stdout.splitlines() if "not found" in l]
        loaded = [l for l in r.stdout.splitlines() if "=>" in l]
        if r.returncode != 0 or unresolved:
            failures.append(f"unresolved libraries: {unresolved or r.stderr.strip()}")
        else:
            print(f"image_test: {len(loaded)} shared libraries resolve inside the image")

        r = container.exec(["/usr/local/bin/dovetail", "version"])
        if r.returncode != 0:
            failures.append(f"`dovetail version` failed in the image: {r.stderr.strip()}")
        else:
            print(f"image_test: dovetail version -> {r.stdout.strip()}")
            want = commit_of(run([test_binary, "version"]).stdout)
            got = commit_of(r.stdout)
            if tag not in r.stdout:
                failures.append(f"version {r.stdout.strip()!r} does not carry the tag {tag}")
            if want and got != want:
                failures.append(f"the image is stale: built from {got}, the test build from "
                                f"{want}; run `make image`")
        r = container.exec(["/usr/local/bin/dovetail", "controller", "--help"])
        if r.returncode != 0 or "--cloud-provider" not in r.stdout:
            failures.append(f"`dovetail controller --help` failed in the image: "
                            f"{(r.stderr or r.stdout).strip()[:300]}")

    size = int(env["COMPRESSED_BYTES"])
    print(f"image_test: {env['NAME']}:{tag} is {size / 1024 / 1024:.1f} MiB compressed "
          f"({archive.stat().st_size / 1024 / 1024:.1f} MiB archive); target < 60 MiB")
    if size >= MAX_COMPRESSED_BYTES:
        failures.append(f"compressed size {size} bytes >= 60 MiB")

    for f in failures:
        print("FAIL", f)
    print(f"image_test: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
