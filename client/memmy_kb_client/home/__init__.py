"""What every part of the client stands on: where the desktop side keeps its state (``paths``), the secrets
and the record of the running service (``credentials``), how a caller makes the service prove itself
before a token goes out (``proof``, ``proven``, ``raw_request``), the control client (``control``) and
what it says of the service (``service_state``), and advice worded as the person can run it (``advice``).
It imports no other part of the client (docs/architecture.md, "Client: layering"). Imports nothing: the
hook imports ``paths`` from it before every turn."""
