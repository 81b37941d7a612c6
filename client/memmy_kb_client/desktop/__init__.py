"""The local service, which holds the cloud login and is the only desktop process that talks to the cloud
(docs/desktop.md). What its callers share with it (the state directory, the proof, the control client)
is ``memmy_kb_client.home``'s."""
