"""Point a Perses npm workspace at Perses packages built here from their published Go module copies.

Usage: local_packages.py WORKSPACE_DIR TARBALL_DIR CORE_VERSION [--peers-as-dev] [--core MEMBER=VERSION]...

Every package.json of the workspace (the root and its members) gets each @perses-dev package found as
TARBALL_DIR/perses-dev-<name>-<version>.tgz as a file: dependency, the same as an npm override (so that a
package from the registry that asks for it gets the same copy), and @perses-dev/core at CORE_VERSION.
Peer dependency ranges on those packages are dropped (the builds here are one set, of one version).
With --peers-as-dev the other peer dependencies of the workspace's members become development
dependencies of its root. --core MEMBER=VERSION gives one member its own @perses-dev/core (a plugin whose
sources use a function the newer core no longer exports; core is not among the modules a plugin shares
with the app, so each plugin bundles its own copy).
"""

import json
import pathlib
import sys


def main() -> None:
    root, tarballs, core = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
    extra = sys.argv[4:]
    member_core = dict(extra[i + 1].split("=", 1) for i, a in enumerate(extra) if a == "--core")
    local = {}
    for tgz in sorted(tarballs.glob("perses-dev-*.tgz")):
        name = tgz.name[len("perses-dev-") : -len(".tgz")].rsplit("-", 1)[0]
        local[f"@perses-dev/{name}"] = f"file:{tgz.resolve()}"
    top = json.loads((root / "package.json").read_text())
    members = [root / m for m in top.get("workspaces", [])]
    peers: dict[str, str] = {}
    for folder in [root, *members]:
        path = folder / "package.json"
        pkg = json.loads(path.read_text())
        for field in ("dependencies", "devDependencies"):
            for dep in pkg.get(field, {}):
                if dep in local:
                    pkg[field][dep] = local[dep]
                elif dep == "@perses-dev/core" and not (root / "core").is_dir():
                    pkg[field][dep] = core
        if folder.name in member_core:
            pkg.setdefault("dependencies", {})["@perses-dev/core"] = member_core[folder.name]
        for dep in list(pkg.get("peerDependencies", {})):
            if dep in local or dep == "@perses-dev/core":
                del pkg["peerDependencies"][dep]
            else:
                peers.setdefault(dep, pkg["peerDependencies"][dep])
        if folder == root:
            pkg["overrides"] = dict(local)
        path.write_text(json.dumps(pkg, indent=2) + "\n")
    if "--peers-as-dev" in extra:
        pkg = json.loads((root / "package.json").read_text())
        dev = pkg.setdefault("devDependencies", {})
        for dep, wanted in sorted(peers.items()):
            dev.setdefault(dep, wanted)
        (root / "package.json").write_text(json.dumps(pkg, indent=2) + "\n")


if __name__ == "__main__":
    main()
