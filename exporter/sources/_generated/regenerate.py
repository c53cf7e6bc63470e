"""Regenerate the protobuf modules of this folder from their .proto sources (needs grpcio-tools).

`python -m exporter.sources._generated.regenerate [--check]`: with --check, exit 1 when the committed
modules differ from what the .proto files generate (CI runs it so the two never drift).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROTOS = [HERE / "podresources_v1" / "podresources.proto"]
OUTPUTS = ("_pb2.py", "_pb2.pyi")


def generate(out_dir: Path) -> None:
    from grpc_tools import protoc  # noqa: PLC0415 - a build-time tool, not a run-time dependency

    for proto in PROTOS:
        args = ["protoc", f"-I{proto.parent}", f"--python_out={out_dir}", f"--pyi_out={out_dir}", str(proto)]
        if protoc.main(args) != 0:
            raise SystemExit(f"protoc failed on {proto}")


def main(argv: list[str]) -> int:
    check = "--check" in argv
    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp))
        stale = []
        for proto in PROTOS:
            for suffix in OUTPUTS:
                name = proto.stem + suffix
                fresh = (Path(tmp) / name).read_text()
                target = proto.parent / name
                if not target.exists() or target.read_text() != fresh:
                    stale.append(target)
                    if not check:
                        target.write_text(fresh)
    if check and stale:
        print("stale generated files:", *map(str, stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
