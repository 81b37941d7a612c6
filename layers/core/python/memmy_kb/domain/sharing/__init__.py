"""Sharing: a KB shared read-only by an identifier, its members, the abuse limits on sharing, and each
user's profile, settings and blocks. Empty on purpose: importing one module loads no other.
"""
