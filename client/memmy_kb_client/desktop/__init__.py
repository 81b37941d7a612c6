"""The local service, which holds the cloud login and is the only desktop process that talks to the cloud,
and the control client of the ``memmy-kb desktop`` commands (docs/desktop.md). Imports nothing: the hook
imports ``paths`` from it before every turn."""
