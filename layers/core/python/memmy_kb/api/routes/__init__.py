"""The HTTP routes, one Powertools ``Router`` per resource. Each function's ``app.py`` includes the
routers it serves (template.yaml keeps one Lambda per concern); every route has the same shape: the
validated input, the caller's verified id, one domain call, a typed body."""
