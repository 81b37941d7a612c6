"""Sharing: who a user is to others (the verified claims, identifiers in normal form, profiles and blocks),
and sharing a KB read-only with them. Empty on purpose: importing one module loads no other.
"""
