"""Recall: the excerpts of the caller's KBs for one agent turn, and what keeps it fair and fast.

``turn`` runs one recall; ``search`` its searches and their re-check; the rest are its parts
(docs/architecture.md, "Module map"). Empty on purpose: importing one module loads no other.
"""
