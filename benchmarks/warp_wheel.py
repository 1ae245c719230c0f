"""Fetch Warp's wheel for the GPU machine into .whl_warp/, small enough to travel (gpu.sh `warp`).

    python3 benchmarks/warp_wheel.py [--version 1.2.2] [--dest .whl_warp]

Takes: a network connection to PyPI (`pip download`, manylinux2014 x86-64, any Python 3).
Writes: DEST/warp_lang-VERSION-py3-none-manylinux2014_x86_64.whl, the PyPI wheel less
warp/examples/ and warp/tests/ (their assets are most of the Python side's size: 63,462,023 ->
60,214,398 bytes for 1.2.2), its RECORD rewritten to match, so that `pip install --target` takes
it as it is. Nothing `import warp` or benchmarks/warp_programs.py uses is removed.

Why 1.2.2: the device tool carries at most 64 MiB (67,108,864 bytes), the repo's working tree
(3.4 MB) included. Warp 1.19's wheel is 149 MB, 1.5-1.6 are over 80 MB, and 1.3/1.4 (65.8 and
66.1 MB, 63.3 MB trimmed) leave under 1 MB beside the repo; 1.2.2 trimmed leaves 3.3 MiB.
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile
import zipfile

DROP = ("warp/examples/", "warp/tests/")
LIMIT = 64 * 2 ** 20


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--version", default="1.2.2")
    ap.add_argument("--dest", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                   "..", ".whl_warp"))
    args = ap.parse_args(argv)
    os.makedirs(args.dest, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                        "--only-binary=:all:", "--platform", "manylinux2014_x86_64",
                        "--python-version", "3.12", "--implementation", "cp", "-d", tmp,
                        f"warp-lang=={args.version}"], check=True)
        src = glob.glob(os.path.join(tmp, "warp_lang-*.whl"))[0]
        dst = os.path.normpath(os.path.join(args.dest, os.path.basename(src)))
        trim(src, dst)
        print(f"{dst}: {os.path.getsize(src)} -> {os.path.getsize(dst)} bytes "
              f"({LIMIT - os.path.getsize(dst)} left of the 64 MiB a device call carries, "
              "the repo's working tree included)")


def trim(src, dst):
    """Copy the wheel `src` to `dst` without DROP's folders (and their RECORD lines)."""
    with zipfile.ZipFile(src) as zi, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED,
                                                     compresslevel=9) as zo:
        for info in zi.infolist():
            if info.filename.startswith(DROP):
                continue
            data = zi.read(info.filename)
            if info.filename.endswith(".dist-info/RECORD"):
                data = "".join(line for line in data.decode().splitlines(keepends=True)
                               if not line.startswith(DROP)).encode()
            zo.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)


if __name__ == "__main__":
    main()
