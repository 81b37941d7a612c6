"""``python -m memmy_kb_client.cli``: the console script's way, for an agent's settings that name Python
rather than ``memmy-kb`` (``agents.hook_install.hook_command``)."""

import sys

from memmy_kb_client.entry import main

if __name__ == "__main__":
    sys.exit(main())
