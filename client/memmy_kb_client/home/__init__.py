"""What every part of the client stands on: where the desktop side keeps its state (``paths``), the secrets
and the record of the running service (``credentials``), how a caller makes the service prove itself
before a token goes out (``proof``, ``proven``, ``raw_request``), the control client (``control``) and
what it says of the service (``service_state``), and advice worded as the person can run it (``advice``).
Of the client it imports only the top-level modules (docs/architecture.md, "Client", "Layering"). This
file imports nothing: the hook imports ``paths`` from the package before every turn."""
