"""`python -m fieldsim cache info|clear [--dir DIR]`: inspect or empty the compile cache;
`python -m fieldsim diagnose`: what fieldsim runs on (fieldsim.tools.diagnose).

`info` prints the cache directory, its entry count and size, the size cap, and whether the
directory is safe to use (owned by you, not group- or world-writable); `clear` removes every
entry (only files the cache itself writes). Exit status 2 on a usage error.
"""
from __future__ import annotations

import argparse
import sys

from fieldsim.codegen import disk_cache


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fieldsim")
    sub = parser.add_subparsers(dest="command", required=True)
    cache = sub.add_parser("cache", help="inspect or clear the on-disk compile cache")
    cache.add_argument("action", choices=["info", "clear"])
    cache.add_argument("--dir", default=None,
                       help="cache directory (default: $FIELDSIM_CACHE_DIR or ~/.cache/fieldsim)")
    sub.add_parser("diagnose", help="print versions, CPU, cache and CUDA state; run a test kernel")
    args = parser.parse_args(argv)
    if args.command == "diagnose":
        from fieldsim.tools import diagnose
        return diagnose.main()
    if args.action == "info":
        i = disk_cache.info(args.dir)
        print(f"directory: {i['dir']}")
        print(f"entries:   {i['entries']}")
        print(f"size:      {i['bytes']} bytes (cap {i['max_bytes']} bytes, "
              "FIELDSIM_CACHE_MAX_BYTES)")
        print("status:    " + ("ok" if i["problem"] is None else f"NOT USED: {i['problem']}"))
    else:
        n = disk_cache.clear(args.dir)
        print(f"removed {n} cache entr{'y' if n == 1 else 'ies'} from "
              f"{args.dir or disk_cache.default_dir()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
