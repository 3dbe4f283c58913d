"""`make run`'s last step: the `infinite-context` command on PATH the way people keep a command
they installed from a checkout, so Claude Code started from any terminal finds it.

A link in ``~/.local/bin`` (the folder is created when missing: Debian's and Ubuntu's default
``~/.profile`` put it on PATH at the next login when it exists) to this checkout's virtual
environment. Then the check ``install claude-code`` and ``doctor`` make: does a fresh login
shell find the command, and is it this one? If not, it says what to add to the shell profile.
Nothing is replaced that is not a link (another installation, e.g. pipx's, stays).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from infinite_context_brain.server.claude_code.entries import SCRIPT, installed_script
from infinite_context_brain.server.claude_code.reach import in_login_shell


def link(home: Path) -> tuple[Path, str | None]:
    """(the link, a problem that stopped it or None)."""
    script = installed_script()
    if script is None:
        return Path(sys.executable), f"no {SCRIPT} script beside {sys.executable}: run `make setup` first"
    folder = home / ".local" / "bin"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / SCRIPT
    if target.is_symlink():
        if os.readlink(target) == script:
            return target, None
        target.unlink()  # a link to an older checkout or venv: ours to replace
    elif target.exists():
        return target, f"{target} is another installation (not a link); it is left as it is"
    target.symlink_to(script)
    return target, None


def main() -> int:
    home = Path.home()
    target, problem = link(home)
    if problem is not None:
        print(f"! {problem}")
        return 1
    print(f"==> {target} -> {os.readlink(target)}")
    found = in_login_shell(SCRIPT)
    if found is not None and Path(found).resolve() == target.resolve():
        print(f"==> a new terminal finds {SCRIPT} ({found}): Claude Code can start it from anywhere.")
        print(f"    Next: `{SCRIPT} install claude-code` in your project, then restart Claude Code.")
        return 0
    where = f"finds another one first ({found})" if found else "does not find it"
    print(f"! a new terminal {where}: {target.parent} is not first on the PATH of a login shell.")
    print("  Add this line to ~/.profile (or your shell's profile), then open a new terminal:")
    print('    export PATH="$HOME/.local/bin:$PATH"')
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
