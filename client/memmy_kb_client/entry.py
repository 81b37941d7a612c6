"""The ``memmy-kb`` console script.

``memmy-kb hook AGENT`` runs before every agent turn, so it goes straight to the hook, importing neither
argparse nor the rest of the CLI; every other command goes through ``memmy_kb_client.cli``.
"""

from __future__ import annotations

import sys

_HOOK_AGENTS = ("claude-code", "codex", "gemini")


def main() -> int:
    argv = sys.argv[1:]
    if len(argv) == 2 and argv[0] == "hook" and argv[1] in _HOOK_AGENTS:
        from memmy_kb_client.agents.hook import main as hook_main

        return hook_main(argv[1])
    from memmy_kb_client.cli.main import main as cli_main

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
