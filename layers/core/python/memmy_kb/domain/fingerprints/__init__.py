"""Fingerprints: the sampled hashes that recognise a file version's text in a search hit, and their life
(taken at ingest, stored, swept by the reconciler). Empty on purpose: importing one module loads no other.
"""
